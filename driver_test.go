package ttldb_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb"
)

// The task: a service written for MongoDB's Go driver keeps its model
// types and its values — bson.D, bson.DateTime, bson.ObjectID, UUIDs,
// Marshalers — and ttldb gives them the driver's meaning. The driver's own
// bson.Marshal and bson.Unmarshal are the oracle: what ttldb stores and
// gives back is what a round trip through the driver gives, except the
// differences the README lists (tested in TestDriverDifferences).

// upper is a type with the driver's document hooks.
type upper struct{ S string }

func (u upper) MarshalBSON() ([]byte, error) {
	return bson.Marshal(bson.D{{Key: "s", Value: "<" + u.S + ">"}})
}

func (u *upper) UnmarshalBSON(b []byte) error {
	var d struct{ S string }
	if err := bson.Unmarshal(b, &d); err != nil {
		return err
	}
	u.S = "[" + d.S + "]"
	return nil
}

// cents is a type with the driver's value hooks: stored as a string.
type cents int64

func (c cents) MarshalBSONValue() (byte, []byte, error) {
	t, b, err := bson.MarshalValue(fmt.Sprintf("%d.%02d", c/100, c%100))
	return byte(t), b, err
}

func (c *cents) UnmarshalBSONValue(t byte, b []byte) error {
	var s string
	if err := bson.UnmarshalValue(bson.Type(t), b, &s); err != nil {
		return err
	}
	var whole, frac int64
	if _, err := fmt.Sscanf(s, "%d.%d", &whole, &frac); err != nil {
		return err
	}
	*c = cents(whole*100 + frac)
	return nil
}

// driverModel holds a field of every driver type ttldb honours.
type driverModel struct {
	ID      bson.ObjectID `bson:"_id"`
	D       bson.D
	M       bson.M
	A       bson.A
	When    bson.DateTime
	TS      bson.Timestamp
	Bin     bson.Binary
	Re      bson.Regex
	Dec     bson.Decimal128
	Min     bson.MinKey
	Max     bson.MaxKey
	Raw     bson.Raw
	RawV    bson.RawValue
	UUID    [16]byte
	Hash    [12]byte
	Any     any
	AnyDoc  any
	Up      upper
	Price   cents
	Empty   []string
	Nil     []string
	Ref     dbRef
	Dotted  dotted
	Dates   []bson.DateTime
	Structs []point
}

type dbRef struct {
	Ref string        `bson:"$ref"`
	ID  bson.ObjectID `bson:"$id"`
}

type point struct{ X, Y int32 }

type dotted struct {
	AB int32 `bson:"a.b"`
	C  int32 `bson:"$c"`
}

func sampleModel(t *testing.T) driverModel {
	t.Helper()
	dec, err := bson.ParseDecimal128("1234.5678901234567890123456789")
	require.NoError(t, err)
	raw, err := bson.Marshal(bson.D{{Key: "r", Value: int32(1)}, {Key: "q", Value: "x"}})
	require.NoError(t, err)
	rvT, rvB, err := bson.MarshalValue(int64(42))
	require.NoError(t, err)
	id := bson.NewObjectIDFromTimestamp(storeT0)
	return driverModel{
		ID:      id,
		D:       bson.D{{Key: "z", Value: int32(1)}, {Key: "a", Value: bson.D{{Key: "y", Value: "n"}, {Key: "b", Value: true}}}},
		M:       bson.M{"k": int64(7)},
		A:       bson.A{int32(1), "s", bson.D{{Key: "in", Value: 2.5}}, bson.A{}},
		When:    bson.NewDateTimeFromTime(storeT0),
		TS:      bson.Timestamp{T: 1700000000, I: 3},
		Bin:     bson.Binary{Subtype: 4, Data: []byte{1, 2, 3, 4}},
		Re:      bson.Regex{Pattern: "^a.c$", Options: "i"},
		Dec:     dec,
		Raw:     raw,
		RawV:    bson.RawValue{Type: rvT, Value: rvB},
		UUID:    [16]byte{0xde, 0xad, 15: 0xef},
		Hash:    [12]byte{1, 11: 2},
		Any:     bson.NewDateTimeFromTime(storeT0.Add(time.Hour)),
		AnyDoc:  bson.D{{Key: "n", Value: int32(1)}},
		Up:      upper{S: "u"},
		Price:   1234,
		Empty:   []string{},
		Ref:     dbRef{Ref: "users", ID: id},
		Dotted:  dotted{AB: 1, C: 2},
		Dates:   []bson.DateTime{bson.NewDateTimeFromTime(storeT0)},
		Structs: []point{{1, 2}},
	}
}

// viaDriver is the oracle: in through bson.Marshal, out into a new T.
func viaDriver[T any](t *testing.T, in any) T {
	t.Helper()
	b, err := bson.Marshal(in)
	require.NoError(t, err)
	var out T
	require.NoError(t, bson.Unmarshal(b, &out))
	return out
}

// TestDriverTypesRoundTrip: a struct of every driver type goes in and comes
// back as the driver's own round trip gives it, into a struct, a bson.D, a
// bson.M and a bson.Raw.
func TestDriverTypesRoundTrip(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("models")
	in := sampleModel(t)
	_, err := c.InsertOne(context.Background(), in)
	require.NoError(t, err)
	res := c.FindOne(context.Background(), ttldb.Document{"_id": in.ID})

	var got driverModel
	require.NoError(t, res.Decode(&got))
	assert.Equal(t, viaDriver[driverModel](t, in), got)
	assert.NotNil(t, got.Empty, "an empty array decodes to an empty slice, as the driver's")
	assert.Nil(t, got.Nil, "null decodes to nil")
	assert.Equal(t, "[<u>]", got.Up.S, "MarshalBSON on the way in, UnmarshalBSON on the way out")
	assert.Equal(t, cents(1234), got.Price)

	var d bson.D
	require.NoError(t, res.Decode(&d))
	assert.Equal(t, viaDriver[bson.D](t, in), d, "field order and the driver's types for any")
	var m bson.M
	require.NoError(t, res.Decode(&m))
	assert.Equal(t, viaDriver[bson.M](t, in), m)
	var raw bson.Raw
	require.NoError(t, res.Decode(&raw))
	want, err := bson.Marshal(viaDriver[bson.D](t, in))
	require.NoError(t, err)
	assert.Equal(t, bson.Raw(want), raw, "the same BSON bytes")

	// The ttldb Document form: dates are time.Time, documents maps.
	doc, err := res.Document()
	require.NoError(t, err)
	assert.Equal(t, storeT0.Truncate(time.Millisecond), doc["when"])
	assert.Equal(t, ttldb.Document{"z": int32(1), "a": ttldb.Document{"y": "n", "b": true}}, doc["d"])
	assert.Equal(t, in.TS, doc["ts"])
	assert.Equal(t, in.Bin, doc["bin"])
	assert.Equal(t, in.Re, doc["re"])
	assert.Equal(t, in.Dec, doc["dec"])
	assert.Equal(t, bson.MinKey{}, doc["min"])
	assert.Equal(t, bson.MaxKey{}, doc["max"])
	assert.Equal(t, []byte(in.UUID[:]), doc["uuid"], "a byte array is binary data")
	assert.Equal(t, ttldb.Document{"$ref": "users", "$id": in.ID}, doc["ref"])
	assert.Equal(t, ttldb.Document{"a.b": int32(1), "$c": int32(2)}, doc["dotted"], "'$'-prefixed and dotted names, as MongoDB 5.0+ stores them")
	assert.Equal(t, ttldb.Document{"s": "<u>"}, doc["up"])
	assert.Equal(t, "12.34", doc["price"])
	assert.Equal(t, int64(42), doc["rawv"])
}

// TestDriverRawArray: a bson.RawArray stands for its content, an array,
// in a Document and in a struct. (The driver v2.8 itself marshals a
// RawArray struct field as binary data; ttldb keeps what the issue of the
// type says it holds.)
func TestDriverRawArray(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("ra")
	_, arr, err := bson.MarshalValue(bson.A{int32(1), "two"})
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": 1, "a": bson.RawArray(arr)})
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), struct {
		ID int           `bson:"_id"`
		A  bson.RawArray `bson:"a"`
	}{2, arr})

	require.NoError(t, err)
	for _, id := range []int{1, 2} {
		doc, err := c.FindOne(context.Background(), ttldb.Document{"_id": id}).Document()
		require.NoError(t, err)
		assert.Equal(t, []any{int32(1), "two"}, doc["a"])
		var back struct {
			A bson.RawArray `bson:"a"`
		}
		require.NoError(t, c.FindOne(context.Background(), ttldb.Document{"_id": id}).Decode(&back))
		assert.Equal(t, bson.RawArray(arr), back.A)
	}
}

// TestDriverTypesInDocument: the same values inside a Document (and a
// bson.D document) are stored the same as in a struct.
func TestDriverTypesInDocument(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("docs")
	in := sampleModel(t)
	asDoc := ttldb.Document{
		"_id": int32(1), "d": in.D, "m": in.M, "a": in.A, "when": in.When, "ts": in.TS, "bin": in.Bin,
		"re": in.Re, "dec": in.Dec, "min": in.Min, "max": in.Max, "raw": in.Raw, "rawv": in.RawV,
		"uuid": in.UUID, "up": in.Up, "price": in.Price, "ref": in.Ref, "null": bson.Null{},
		"structs": in.Structs, "oid": in.ID,
	}
	_, err := c.InsertOne(context.Background(), asDoc)
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), bson.D{{Key: "_id", Value: 2}, {Key: "when", Value: in.When}, {Key: "ref", Value: in.Ref}})
	require.NoError(t, err)

	got, err := c.FindOne(context.Background(), ttldb.Document{"_id": int32(1)}).Document()
	require.NoError(t, err)
	want := viaDriver[bson.M](t, asDoc) // the driver's reading, in the driver's types
	for k, v := range want {
		var dec any
		require.NoError(t, c.FindOne(context.Background(), ttldb.Document{"_id": int32(1)}).Decode(&dec))
		asM := bson.M{}
		for _, e := range dec.(bson.D) {
			asM[e.Key] = e.Value
		}
		assert.Equal(t, v, asM[k], "field %s", k)
	}
	assert.Nil(t, got["null"])
	assert.Equal(t, ttldb.Document{"x": int32(1), "y": int32(2)}, got["structs"].([]map[string]any)[0], "a struct in a Document is a document")

	var two struct {
		ID   int           `bson:"_id"`
		When bson.DateTime `bson:"when"`
		Ref  dbRef         `bson:"ref"`
	}
	require.NoError(t, c.FindOne(context.Background(), ttldb.Document{"_id": 2}).Decode(&two))
	assert.Equal(t, in.When, two.When)
	assert.Equal(t, in.Ref, two.Ref)
}

// TestDriverFilters: the driver's values and containers in filters mean
// what they mean to MongoDB.
func TestDriverFilters(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("f")
	type windowKey struct {
		User   string `bson:"user"`
		Bucket int64  `bson:"bucket"`
	}
	dec := func(s string) bson.Decimal128 {
		d, err := bson.ParseDecimal128(s)
		require.NoError(t, err)
		return d
	}
	mustInsert(t, c,
		ttldb.Document{"_id": windowKey{"ann", 1}, "n": int32(1), "at": storeT0, "s": "Apple", "ts": bson.Timestamp{T: 5}, "bin": bson.Binary{Subtype: 4, Data: []byte{1}}, "dec": dec("1.5")},
		ttldb.Document{"_id": windowKey{"bob", 2}, "n": int64(6), "at": bson.NewDateTimeFromTime(storeT0.Add(time.Hour)), "s": "banana", "ts": bson.Timestamp{T: 5, I: 1}, "bin": []byte{1}, "dec": dec("6")},
		ttldb.Document{"_id": "plain", "n": 7.5, "oid": bson.ObjectID{9}, "re": bson.Regex{Pattern: "x"}},
	)
	cases := []struct {
		name   string
		filter ttldb.Document
		want   []any
	}{
		{"struct _id", ttldb.Document{"_id": windowKey{"ann", 1}}, []any{ttldb.Document{"user": "ann", "bucket": int64(1)}}},
		{"bson.D operator", ttldb.Document{"n": bson.D{{Key: "$gt", Value: int32(5)}}}, []any{ttldb.Document{"user": "bob", "bucket": int64(2)}, "plain"}},
		{"bson.M operator in bson.A", ttldb.Document{"$or": bson.A{bson.M{"n": 1}, bson.D{{Key: "_id", Value: "plain"}}}}, []any{ttldb.Document{"user": "ann", "bucket": int64(1)}, "plain"}},
		{"bson.DateTime against dates", ttldb.Document{"at": ttldb.Document{"$lt": bson.NewDateTimeFromTime(storeT0.Add(time.Minute))}}, []any{ttldb.Document{"user": "ann", "bucket": int64(1)}}},
		{"time.Time against a stored bson.DateTime", ttldb.Document{"at": ttldb.Document{"$gte": storeT0.Add(time.Hour).Truncate(time.Millisecond)}}, []any{ttldb.Document{"user": "bob", "bucket": int64(2)}}},
		{"bson.Regex with its options", ttldb.Document{"s": bson.Regex{Pattern: "^b", Options: "i"}}, []any{ttldb.Document{"user": "bob", "bucket": int64(2)}}},
		{"bson.Regex in $in", ttldb.Document{"s": ttldb.Document{"$in": bson.A{bson.Regex{Pattern: "^a", Options: "i"}}}}, []any{ttldb.Document{"user": "ann", "bucket": int64(1)}}},
		{"bson.Regex in $eq is a value", ttldb.Document{"re": ttldb.Document{"$eq": bson.Regex{Pattern: "x"}}}, []any{"plain"}},
		{"timestamp order", ttldb.Document{"ts": ttldb.Document{"$gt": bson.Timestamp{T: 5}}}, []any{ttldb.Document{"user": "bob", "bucket": int64(2)}}},
		{"binary subtypes differ", ttldb.Document{"bin": bson.Binary{Data: []byte{1}}}, []any{ttldb.Document{"user": "bob", "bucket": int64(2)}}},
		{"Decimal128 equals the number", ttldb.Document{"n": dec("6.0")}, []any{ttldb.Document{"user": "bob", "bucket": int64(2)}}},
		{"Decimal128 ranges over numbers", ttldb.Document{"dec": ttldb.Document{"$gt": 1.25, "$lt": int32(2)}}, []any{ttldb.Document{"user": "ann", "bucket": int64(1)}}},
		{"ObjectID in a filter", ttldb.Document{"oid": bson.ObjectID{9}}, []any{"plain"}},
		{"$type timestamp", ttldb.Document{"ts": ttldb.Document{"$type": "timestamp"}}, []any{ttldb.Document{"user": "ann", "bucket": int64(1)}, ttldb.Document{"user": "bob", "bucket": int64(2)}}},
		{"$type decimal", ttldb.Document{"dec": ttldb.Document{"$type": 19}}, []any{ttldb.Document{"user": "ann", "bucket": int64(1)}, ttldb.Document{"user": "bob", "bucket": int64(2)}}},
		{"$type regex", ttldb.Document{"re": ttldb.Document{"$type": "regex"}}, []any{"plain"}},
		{"$type binData", ttldb.Document{"bin": ttldb.Document{"$type": "binData"}}, []any{ttldb.Document{"user": "ann", "bucket": int64(1)}, ttldb.Document{"user": "bob", "bucket": int64(2)}}},
		{"bson.Raw operator document", ttldb.Document{"n": mustRaw(t, bson.D{{Key: "$lte", Value: int32(1)}})}, []any{ttldb.Document{"user": "ann", "bucket": int64(1)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := findDocs(c, tc.filter, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("n")}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, ids(docs))
		})
	}
	_, err := findDocs(c, ttldb.Document{"n": bson.D{{Key: "$gt", Value: 1}, {Key: "$gt", Value: 2}}})
	require.ErrorIs(t, err, ttldb.ErrInvalidFilter, "a bson.D with a key twice")
}

func mustRaw(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	require.NoError(t, err)
	return b
}

// TestDriverUpdates: structs, bson.D and the driver's values in updates.
func TestDriverUpdates(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("u")
	mustInsert(t, c, ttldb.Document{"_id": 1, "d": bson.NewDecimal128(0, 5), "n": 1})
	_, err := c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{
		"$set": bson.D{{Key: "p", Value: point{3, 4}}, {Key: "at", Value: bson.DateTime(1000)}, {Key: "nested", Value: ttldb.Document{"$literal": 1}}},
		"$max": bson.M{"seen": bson.NewDateTimeFromTime(storeT0)},
	})

	require.NoError(t, err)
	got, err := c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
	require.NoError(t, err)
	assert.Equal(t, ttldb.Document{"x": int32(3), "y": int32(4)}, got["p"])
	assert.Equal(t, time.UnixMilli(1000).UTC(), got["at"])
	assert.Equal(t, storeT0.Truncate(time.Millisecond), got["seen"])
	assert.Equal(t, ttldb.Document{"$literal": 1}, got["nested"], "a '$'-prefixed name inside a $set value is stored (MongoDB 5.0+)")

	// ttldb compares Decimal128 values exactly but does not compute with
	// them: $inc and $mul on one are refused and change nothing.
	for _, upd := range []ttldb.Document{{"$inc": ttldb.Document{"d": 1}}, {"$mul": ttldb.Document{"d": 2}}, {"$inc": ttldb.Document{"n": bson.NewDecimal128(0, 1)}}} {
		_, err := c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, upd)
		require.ErrorIs(t, err, ttldb.ErrInvalidUpdate, "%v", upd)
		after, err := c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
		require.NoError(t, err)
		assert.Equal(t, got, after)
	}
	// $inc of a missing field sets it to the increment: no arithmetic.
	_, err = c.UpdateOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$inc": ttldb.Document{"fresh": bson.NewDecimal128(0, 1)}})
	require.NoError(t, err)
	after, err := c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
	require.NoError(t, err)
	assert.Equal(t, bson.NewDecimal128(0, 1), after["fresh"])
}

// TestDriverSortOrder: values of every type sort in MongoDB's BSON order,
// by a scan and through an index alike.
func TestDriverSortOrder(t *testing.T) {
	db, _ := openStore(t)
	scan := db.Collection("scan")
	indexed := db.Collection("indexed")
	_, err := indexed.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("v")}})
	require.NoError(t, err)
	oid := bson.ObjectID{1}
	values := []any{ // in ascending BSON order
		bson.MinKey{}, nil, int32(-1), bson.NewDecimal128(0x3040000000000000, 0), 2.5, "a", ttldb.Document{"a": 1},
		[]any{int32(9)}, []byte{0}, bson.Binary{Subtype: 4, Data: []byte{0}}, []byte{0, 0}, oid, false, true,
		storeT0, bson.Timestamp{T: 1}, bson.Timestamp{T: 1, I: 2}, bson.Regex{Pattern: "a"}, bson.MaxKey{},
	}
	for i, v := range values {
		for _, c := range []*ttldb.Collection{scan, indexed} {
			_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": len(values) - i, "v": v})
			require.NoError(t, err)
		}
	}
	for _, c := range []*ttldb.Collection{scan, indexed} {
		docs, err := findDocs(c, ttldb.Document{}, ttldb.FindOptions{Sort: []ttldb.IndexKey{ttldb.Asc("v")}})
		require.NoError(t, err)
		var order []int
		for _, d := range docs {
			order = append(order, len(values)-d["_id"].(int))
		}
		// [9] sorts as its smallest element, the number 9: after 2.5,
		// before "a".
		want := []int{0, 1, 2, 3, 4, 7, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}
		assert.Equal(t, want, order, "%s", c.Name())
	}
	// A Decimal128 equal to an indexed number finds it through the index.
	docs, err := findDocs(indexed, ttldb.Document{"v": bson.NewDecimal128(0x3040000000000000, 25)})
	require.NoError(t, err)
	assert.Empty(t, docs)
	d25, err := bson.ParseDecimal128("2.50")
	require.NoError(t, err)
	docs, err = findDocs(indexed, ttldb.Document{"v": d25})
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, 2.5, docs[0]["v"])
}

// TestDriverIndexes: the driver's values in indexed fields — a unique
// index on a UUID, a Decimal128 an index key cannot hold refused.
func TestDriverIndexes(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("ix")
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("uuid")}, Unique: true})
	require.NoError(t, err)
	u := [16]byte{1, 2, 3}
	_, err = c.InsertOne(context.Background(), ttldb.Document{"uuid": u})
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), struct {
		UUID [16]byte `bson:"uuid"`
	}{u})

	require.ErrorIs(t, err, ttldb.ErrDuplicateKey, "a [16]byte is binary data in a Document and in a struct alike")
	_, err = c.InsertOne(context.Background(), ttldb.Document{"uuid": bson.Binary{Subtype: 4, Data: u[:]}})
	require.NoError(t, err, "a UUID of subtype 4 is another value")

	precise, err := bson.ParseDecimal128("0.1")
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": "dec", "uuid": precise})
	require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
	require.ErrorContains(t, err, "Decimal128")
	_, err = c.FindOne(context.Background(), ttldb.Document{"_id": "dec"}).Document()
	require.ErrorIs(t, err, ttldb.ErrNotFound, "nothing stored")
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": "dec", "other": precise})
	require.NoError(t, err, "an unindexed field holds any Decimal128")
}

// TestDriverDateTimeTTL: a TTL index on a bson.DateTime field expires on
// time, in a Document, a struct and a bson.D alike.
func TestDriverDateTimeTTL(t *testing.T) {
	db, clk := openStore(t)
	c := db.Collection("sessions")
	_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(60)})
	require.NoError(t, err)
	at := bson.NewDateTimeFromTime(clk.Now())
	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": "doc", "at": at})
	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), struct {
		ID string        `bson:"_id"`
		At bson.DateTime `bson:"at"`
	}{"struct", bson.NewDateTimeFromTime(clk.Now().Add(30 * time.Second))})

	require.NoError(t, err)
	_, err = c.InsertOne(context.Background(), bson.D{{Key: "_id", Value: "d"}, {Key: "at", Value: at}})
	require.NoError(t, err)
	exp, ok, err := c.ExpiresAt(context.Background(), "doc")
	require.NoError(t, err)
	require.True(t, ok, "the date is a date: the TTL index holds it")
	assert.Equal(t, at.Time().Add(time.Minute).UTC(), exp)

	clk.Advance(61 * time.Second)
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	docs, err := findDocs(c, ttldb.Document{})
	require.NoError(t, err)
	assert.Equal(t, []any{"struct"}, ids(docs))
	clk.Advance(30 * time.Second)
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 0, count(t, c, ttldb.Document{}))
}

// TestDriverFieldNames: '$'-prefixed and dotted names are stored as MongoDB
// 5.0+ stores them; a dotted path in a filter still means nesting; a
// '$'-prefixed name inside _id is refused.
func TestDriverFieldNames(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("names")
	mustInsert(t, c, ttldb.Document{"_id": 1, "$top": 1, "a.b": "literal", "a": ttldb.Document{"b": "nested"}, "n": ttldb.Document{"$x": 2}})
	docs, err := findDocs(c, ttldb.Document{"a.b": "nested"})
	require.NoError(t, err)
	assert.Len(t, docs, 1, "a dotted path reaches the nested field")
	docs, err = findDocs(c, ttldb.Document{"a.b": "literal"})
	require.NoError(t, err)
	assert.Empty(t, docs, "not the field whose name holds a dot")
	got, err := c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
	require.NoError(t, err)
	assert.Equal(t, ttldb.Document{"_id": 1, "$top": 1, "a.b": "literal", "a": ttldb.Document{"b": "nested"}, "n": ttldb.Document{"$x": 2}}, got)

	_, err = c.InsertOne(context.Background(), ttldb.Document{"_id": ttldb.Document{"$ref": "x"}})
	require.ErrorIs(t, err, ttldb.ErrInvalidDocument)
	var de *ttldb.DocumentError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "_id.$ref", de.Path)
	_, err = c.ReplaceOne(context.Background(), ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"a": 1}})
	require.Error(t, err, "a replacement that reads as an update is refused")
}

// TestDriverRefusals: what ttldb cannot keep is refused with the path and
// the type, never stored as something else.
func TestDriverRefusals(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("r")
	for _, tc := range []struct {
		v    any
		path string
		typ  string
	}{
		{bson.JavaScript("f()"), "v", "bson.JavaScript"},
		{bson.Symbol("s"), "v", "bson.Symbol"},
		{bson.CodeWithScope{Code: "x"}, "v", "bson.CodeWithScope"},
		{bson.DBPointer{DB: "d"}, "v", "bson.DBPointer"},
		{bson.Undefined{}, "v", "bson.Undefined"},
		{[]any{1, bson.JavaScript("x")}, "v.1", "bson.JavaScript"},
		{ttldb.Document{"in": bson.Symbol("x")}, "v.in", "bson.Symbol"},
	} {
		_, err := c.InsertOne(context.Background(), ttldb.Document{"v": tc.v})
		require.ErrorIs(t, err, ttldb.ErrInvalidDocument, "%T", tc.v)
		var de *ttldb.DocumentError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, tc.path, de.Path)
		assert.Contains(t, err.Error(), tc.typ)
	}
	var js struct{ V bson.JavaScript }
	_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": 1, "v": "code"})
	require.NoError(t, err)
	err = c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Decode(&js)
	require.ErrorIs(t, err, ttldb.ErrDecode, "decoding into a type ttldb does not store")
	assert.Equal(t, 1, count(t, c, ttldb.Document{}))
}

// TestDriverDifferences pins each difference the README lists between
// ttldb and a round trip through the driver.
func TestDriverDifferences(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("diff")
	at := time.Date(2026, 1, 2, 3, 4, 5, 123_456_789, time.UTC)
	_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": 1, "at": at, "big": uint64(math.MaxUint64), "n": 5})
	require.NoError(t, err)

	// A time.Time keeps its nanoseconds (the driver keeps milliseconds);
	// a bson.DateTime destination, and Extended JSON, get milliseconds.
	doc, err := c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Document()
	require.NoError(t, err)
	assert.Equal(t, at, doc["at"])
	var viaDT struct {
		At bson.DateTime `bson:"at"`
	}
	require.NoError(t, c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Decode(&viaDT))
	assert.Equal(t, bson.NewDateTimeFromTime(at), viaDT.At)

	// An unsigned integer above 2^63−1 is stored (the driver refuses it).
	assert.Equal(t, uint64(math.MaxUint64), doc["big"])
	_, err = bson.Marshal(bson.M{"big": uint64(math.MaxUint64)})
	require.Error(t, err, "the driver refuses it")

	// Every Go number kind comes back as stored: an int stays an int
	// (the driver writes an int as int32 or int64).
	assert.Equal(t, 5, doc["n"])
	var anyN struct{ N any }
	require.NoError(t, c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Decode(&anyN))
	assert.Equal(t, 5, anyN.N)
	assert.Equal(t, int32(5), viaDriver[struct{ N any }](t, bson.M{"n": 5}).N)
}

// TestDecodeEmptyAndNull: an empty array decodes to an empty, non-nil
// slice and null to nil, as the driver decodes them.
func TestDecodeEmptyAndNull(t *testing.T) {
	db, _ := openStore(t)
	c := db.Collection("e")
	mustInsert(t, c, ttldb.Document{"_id": 1, "tags": []any{}, "none": nil, "m": ttldb.Document{}})
	var out struct {
		Tags []string
		None []string
		M    map[string]int
	}
	require.NoError(t, c.FindOne(context.Background(), ttldb.Document{"_id": 1}).Decode(&out))
	require.NotNil(t, out.Tags)
	assert.Empty(t, out.Tags)
	assert.Nil(t, out.None)
	assert.NotNil(t, out.M)
	want := viaDriver[struct {
		Tags []string
		None []string
		M    map[string]int
	}](t, bson.M{"tags": bson.A{}, "none": nil, "m": bson.M{}})
	assert.Equal(t, want, out)
}

// TestBSONOptionsDefaultDocumentM: with the driver's DefaultDocumentM, an
// any destination gets a bson.M, through FindOne, Find and a change
// stream; by default a bson.D.
func TestBSONOptionsDefaultDocumentM(t *testing.T) {
	type withAny struct {
		ID  int `bson:"_id"`
		Any any `bson:"any"`
	}
	for _, m := range []bool{false, true} {
		db, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}), ttldb.WithBSONOptions(ttldb.BSONOptions{DefaultDocumentM: m}))
		require.NoError(t, err)
		c := db.Collection("m")
		ctx := context.Background()
		cs, err := c.Watch(ctx, nil)
		require.NoError(t, err)
		mustInsert(t, c, ttldb.Document{"_id": 1, "any": ttldb.Document{"x": 1}})
		want := any(bson.D{{Key: "x", Value: 1}})
		if m {
			want = bson.M{"x": 1}
		}
		var one withAny
		require.NoError(t, c.FindOne(ctx, ttldb.Document{"_id": 1}).Decode(&one))
		assert.Equal(t, want, one.Any, "FindOne, DefaultDocumentM %v", m)
		var many []withAny
		cur, err := c.Find(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, cur.All(ctx, &many))
		assert.Equal(t, want, many[0].Any, "Find")
		var got withAny
		require.NoError(t, c.FindOneAndUpdate(ctx, ttldb.Document{"_id": 1}, ttldb.Document{"$set": ttldb.Document{"y": 1}}).Decode(&got))
		assert.Equal(t, want, got.Any, "FindOneAndUpdate")
		require.True(t, cs.TryNext(ctx))
		var ev struct {
			FullDocument withAny `bson:"fullDocument"`
		}
		require.NoError(t, cs.Decode(&ev))
		assert.Equal(t, want, ev.FullDocument.Any, "a change event")
		var doc ttldb.Document
		require.NoError(t, c.FindOne(ctx, ttldb.Document{"_id": 1}).Decode(&doc))
		assert.Equal(t, ttldb.Document{"x": 1}, doc["any"], "a Document destination keeps ttldb's forms")
		require.NoError(t, cs.Close(ctx))
		require.NoError(t, db.Close())
	}
}
