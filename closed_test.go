package ttldb_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ttldb/ttldb"
)

// closedCall is one call, with arguments that are wrong, on a DB and on one
// of its collection handles.
type closedCall struct {
	method string // the DB or Collection method it calls
	call   func(db *ttldb.DB, c *ttldb.Collection) error
}

// closedCalls call every public method that returns an error with invalid
// arguments: before Close each fails with its validation error, after
// Close with ErrClosed, whatever else is wrong with the call.
func closedCalls() []closedCall {
	cyclic := ttldb.Document{}
	cyclic["self"] = cyclic
	badDoc := ttldb.Document{"_id": 1, "f": func() {}}
	badFilter := ttldb.Document{"$nope": 1}
	badUpdate := ttldb.Document{"$nope": ttldb.Document{"a": 1}}
	badOpts := ttldb.FindOptions{Limit: -1}
	badIndex := ttldb.IndexModel{Keys: []ttldb.IndexKey{{Field: "x", Order: 7}}}
	noSeconds := ttldb.CollModIndex{Name: "x_1"}
	return []closedCall{
		{"CreateCollection", func(db *ttldb.DB, _ *ttldb.Collection) error {
			_, err := db.CreateCollection("$bad", ttldb.CollectionOptions{Capped: true})
			return err
		}},
		{"CreateCollection", func(db *ttldb.DB, _ *ttldb.Collection) error {
			_, err := db.CreateCollection("fine", ttldb.CollectionOptions{Capped: true})
			return err
		}},
		{"DropCollection", func(db *ttldb.DB, _ *ttldb.Collection) error { return db.DropCollection("") }},
		{"DropCollection", func(db *ttldb.DB, _ *ttldb.Collection) error { return db.DropCollection("missing") }},
		{"CollMod", func(db *ttldb.DB, c *ttldb.Collection) error {
			_, err := db.CollMod(c.Name(), noSeconds)
			return err
		}},
		{"RunTTLPass", func(db *ttldb.DB, _ *ttldb.Collection) error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := db.RunTTLPass(ctx)
			return err
		}},
		{"Distinct", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.Distinct(context.Background(), "", badFilter)
			return err
		}},
		{"EstimatedDocumentCount", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.EstimatedDocumentCount()
			return err
		}},
		{"InsertOne", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.InsertOne(badDoc); return err }},
		{"InsertOne", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.InsertOne(cyclic); return err }},
		{"InsertOne", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.InsertOne(nil); return err }},
		{"InsertMany", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.InsertMany([]ttldb.Document{{"_id": 2}, badDoc})
			return err
		}},
		{"InsertMany", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.InsertMany([]ttldb.Document{{"_id": 1}})
			return err
		}},
		{"Find", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := findDocs(c, badFilter); return err }},
		{"Find", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := findDocs(c, nil, badOpts); return err }},
		{"FindOne", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.FindOne(badFilter).Document(); return err }},
		{"FindOne", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.FindOne(ttldb.Document{"_id": "missing"}).Document()
			return err
		}},
		{"CountDocuments", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CountDocuments(context.Background(), badFilter)
			return err
		}},
		{"Explain", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.Explain(badFilter); return err }},
		{"UpdateOne", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.UpdateOne(badFilter, badUpdate); return err }},
		{"UpdateOne", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.UpdateOne(nil, badUpdate); return err }},
		{"UpdateMany", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.UpdateMany(context.Background(), nil, badUpdate)
			return err
		}},
		{"ReplaceOne", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.ReplaceOne(nil, badDoc); return err }},
		{"ReplaceOne", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.ReplaceOne(nil, ttldb.Document{"$set": 1})
			return err
		}},
		{"FindOneAndUpdate", func(_ *ttldb.DB, c *ttldb.Collection) error {
			return c.FindOneAndUpdate(badFilter, badUpdate).Err()
		}},
		{"FindOneAndReplace", func(_ *ttldb.DB, c *ttldb.Collection) error { return c.FindOneAndReplace(nil, badDoc).Err() }},
		{"FindOneAndDelete", func(_ *ttldb.DB, c *ttldb.Collection) error { return c.FindOneAndDelete(badFilter).Err() }},
		{"BulkWrite", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.BulkWrite(context.Background(), nil)
			return err
		}},
		{"BulkWrite", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.BulkWrite(context.Background(), []ttldb.WriteModel{ttldb.DeleteManyModel{Filter: badFilter}})
			return err
		}},
		{"DeleteOne", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.DeleteOne(badFilter); return err }},
		{"DeleteMany", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.DeleteMany(context.Background(), badFilter)
			return err
		}},
		{"CreateIndex", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CreateIndex(context.Background(), badIndex)
			return err
		}},
		{"CreateIndex", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("_id")}, ExpireAfterSeconds: ttldb.Seconds(1)})
			return err
		}},
		{"DropIndex", func(_ *ttldb.DB, c *ttldb.Collection) error { return c.DropIndex("_id_") }},
		{"DropIndex", func(_ *ttldb.DB, c *ttldb.Collection) error { return c.DropIndex("missing") }},
		{"Indexes", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.Indexes(); return err }},
		{"Compact", func(_ *ttldb.DB, c *ttldb.Collection) error { return c.Compact() }},
		{"ExpiresAt", func(_ *ttldb.DB, c *ttldb.Collection) error { _, _, err := c.ExpiresAt(func() {}); return err }},
		{"ExpiresAt", func(_ *ttldb.DB, c *ttldb.Collection) error { _, _, err := c.ExpiresAt("missing"); return err }},
		{"CollMod", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.CollMod(noSeconds); return err }},
		{"CollMod", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CollMod(ttldb.CollModIndex{Name: "x_1", ExpireAfterSeconds: ttldb.Seconds(-1)})
			return err
		}},
		{"CollMod", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CollMod(ttldb.CollModIndex{ExpireAfterSeconds: ttldb.Seconds(1)})
			return err
		}},
		{"ExplainTTLDelete", func(_ *ttldb.DB, c *ttldb.Collection) error { _, err := c.ExplainTTLDelete("missing"); return err }},
		{"ListCollectionNames", func(db *ttldb.DB, _ *ttldb.Collection) error { _, err := db.ListCollectionNames(); return err }},
		{"Apply", func(db *ttldb.DB, _ *ttldb.Collection) error { return db.Apply(ttldb.Op{Seq: 7, Kind: 99}) }},
		{"Backup", func(db *ttldb.DB, _ *ttldb.Collection) error { return db.Backup(failingWriter{}) }},
		{"CollModTimeSeries", func(db *ttldb.DB, c *ttldb.Collection) error {
			_, err := db.CollModTimeSeries(c.Name(), ttldb.TimeSeriesCollMod{ExpireAfterSeconds: ttldb.Seconds(-1)})
			return err
		}},
		{"CollModTimeSeries", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.CollModTimeSeries(ttldb.TimeSeriesCollMod{})
			return err
		}},
		{"TimeSeriesInfo", func(_ *ttldb.DB, c *ttldb.Collection) error { _, _, err := c.TimeSeriesInfo(); return err }},
		{"Watch", func(db *ttldb.DB, _ *ttldb.Collection) error {
			_, err := db.Watch(context.Background(), ttldb.ChangeStreamOptions{OperationTypes: []ttldb.OperationType{"upsert"}})
			return err
		}},
		{"Watch", func(_ *ttldb.DB, c *ttldb.Collection) error {
			_, err := c.Watch(context.Background(), ttldb.ChangeStreamOptions{Collections: []string{"other"}})
			return err
		}},
		{"Backup", func(db *ttldb.DB, _ *ttldb.Collection) error { return db.Backup(nil) }},
		{"Snapshot", func(db *ttldb.DB, _ *ttldb.Collection) error { return db.Snapshot() }},
		{"Apply", func(db *ttldb.DB, _ *ttldb.Collection) error { return db.Apply(ttldb.Op{Seq: 1 << 40}) }},
		{"MarkCommitted", func(db *ttldb.DB, _ *ttldb.Collection) error { return db.MarkCommitted(1 << 40) }},
	}
}

// Rule: once the DB is closed, ErrClosed comes first, before any check of
// the arguments or of the collection's name, for every public method that
// returns an error.
func TestClosedComesFirst(t *testing.T) {
	covered := map[string]bool{}
	for _, cc := range closedCalls() {
		covered[cc.method] = true
	}
	// The table covers every exported method of DB and Collection that can
	// fail (Close itself never does).
	for _, typ := range []reflect.Type{reflect.TypeFor[*ttldb.DB](), reflect.TypeFor[*ttldb.Collection]()} {
		errType := reflect.TypeFor[error]()
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			ft := m.Type
			if ft.NumOut() == 0 || ft.Out(ft.NumOut()-1) != errType || m.Name == "Close" {
				continue
			}
			assert.True(t, covered[m.Name], "%s.%s returns an error but has no case", typ.Elem().Name(), m.Name)
		}
	}

	for _, handle := range []string{"c", "$bad name"} {
		db, err := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
		require.NoError(t, err)
		c := db.Collection("c")
		_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("x")}})
		require.NoError(t, err)
		_, err = c.InsertOne(ttldb.Document{"_id": 1, "x": 1})
		require.NoError(t, err)
		h := db.Collection(handle)

		calls := closedCalls()
		open := make([]error, len(calls))
		for i, cc := range calls {
			open[i] = cc.call(db, h)
		}
		require.NoError(t, db.Close())
		for i, cc := range calls {
			if cc.method == "ListCollectionNames" || cc.method == "Indexes" && handle == "c" ||
				cc.method == "Compact" && handle == "c" || cc.method == "TimeSeriesInfo" && handle == "c" ||
				cc.method == "EstimatedDocumentCount" && handle == "c" {
				// Nothing about these calls is wrong while open.
				assert.NoError(t, open[i], "%s on %q, open", cc.method, handle)
			} else if cc.method != "RunTTLPass" {
				assert.Error(t, open[i], "case %d (%s) on %q is meant to be invalid", i, cc.method, handle)
				assert.False(t, errors.Is(open[i], ttldb.ErrClosed))
			}
			err := cc.call(db, h)
			assert.ErrorIs(t, err, ttldb.ErrClosed, "case %d (%s) on %q after Close: %v", i, cc.method, handle, err)
		}
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("write refused") }
