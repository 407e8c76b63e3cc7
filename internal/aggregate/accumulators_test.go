package aggregate

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/query"
)

// The accumulator pages' sales collection.
func accSales() []Document {
	return []Document{
		{"_id": 1, "item": "abc", "price": 10, "quantity": 2, "date": date("2014-01-01T08:00:00Z")},
		{"_id": 2, "item": "jkl", "price": 20, "quantity": 1, "date": date("2014-02-03T09:00:00Z")},
		{"_id": 3, "item": "xyz", "price": 5, "quantity": 5, "date": date("2014-02-03T09:05:00Z")},
		{"_id": 4, "item": "abc", "price": 10, "quantity": 10, "date": date("2014-02-15T08:00:00Z")},
		{"_id": 5, "item": "xyz", "price": 5, "quantity": 10, "date": date("2014-02-15T09:12:00Z")},
	}
}

// accumulate runs {$group: {_id: null, r: {op: arg}}} over values (each
// in field v; Missing: no field) and returns r.
func accumulate(t *testing.T, op string, arg any, values ...any) any {
	t.Helper()
	docs := make([]Document, len(values))
	for i, v := range values {
		docs[i] = Document{"i": i}
		if !query.IsMissing(v) {
			docs[i]["v"] = v
		}
	}
	got := run(t, A{M{"$group": M{"_id": nil, "r": M{op: arg}}}}, docs)
	require.Len(t, got, 1)
	return got[0]["r"]
}

func TestManual_sumAvgMinMax(t *testing.T) {
	sales := accSales()
	got := run(t, A{M{"$group": M{"_id": "$item", "avgQuantity": M{"$avg": "$quantity"}, "minQuantity": M{"$min": "$quantity"}, "maxQuantity": M{"$max": "$quantity"}, "count": M{"$sum": int32(1)}}}}, sales)
	requireSameSet(t, []Document{
		{"_id": "xyz", "avgQuantity": 7.5, "minQuantity": 5, "maxQuantity": 10, "count": 2},
		{"_id": "jkl", "avgQuantity": 1.0, "minQuantity": 1, "maxQuantity": 1, "count": 1},
		{"_id": "abc", "avgQuantity": 6.0, "minQuantity": 2, "maxQuantity": 10, "count": 2},
	}, got)
	t.Run("with $multiply and date operators", func(t *testing.T) {
		if !query.IsExprOperator("$multiply") || !query.IsExprOperator("$dayOfYear") || !query.IsExprOperator("$year") {
			t.Skip("$multiply, $dayOfYear and $year are not on this branch")
		}
		got := run(t, A{M{"$group": M{
			"_id":         M{"day": M{"$dayOfYear": "$date"}, "year": M{"$year": "$date"}},
			"totalAmount": M{"$sum": M{"$multiply": A{"$price", "$quantity"}}},
			"count":       M{"$sum": 1},
		}}}, sales)
		requireSameSet(t, []Document{
			{"_id": M{"day": 46, "year": 2014}, "totalAmount": 150, "count": 2},
			{"_id": M{"day": 34, "year": 2014}, "totalAmount": 45, "count": 2},
			{"_id": M{"day": 1, "year": 2014}, "totalAmount": 20, "count": 1},
		}, got)
		got = run(t, A{M{"$group": M{"_id": "$item", "avgAmount": M{"$avg": M{"$multiply": A{"$price", "$quantity"}}}, "maxTotalAmount": M{"$max": M{"$multiply": A{"$price", "$quantity"}}}}}}, sales)
		requireSameSet(t, []Document{
			{"_id": "xyz", "avgAmount": 37.5, "maxTotalAmount": 50},
			{"_id": "jkl", "avgAmount": 20.0, "maxTotalAmount": 20},
			{"_id": "abc", "avgAmount": 60.0, "maxTotalAmount": 100},
		}, got)
	})
}

func TestSum_types(t *testing.T) {
	M := query.Missing
	cases := []struct {
		name string
		vals []any
		want any
	}{
		{"ints", []any{int32(1), int32(2)}, int32(3)},
		{"no numbers", []any{"a", nil, M, true}, int32(0)},
		{"non-numbers ignored", []any{int32(1), "2", A{3}, int32(4)}, int32(5)},
		{"int overflow to long", []any{int32(math.MaxInt32), int32(1)}, int64(math.MaxInt32) + 1},
		{"long", []any{int32(1), int64(2)}, int64(3)},
		{"go int is long", []any{1, 2}, int64(3)},
		{"long overflow to double", []any{int64(math.MaxInt64), int64(1)}, float64(math.MaxInt64) + 1},
		{"double", []any{int32(1), 0.5}, 1.5},
		{"decimal", []any{int32(1), dec("0.25"), 0.5}, dec("1.75")},
		{"nan", []any{1.0, math.NaN()}, math.NaN()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := accumulate(t, "$sum", "$v", c.vals...)
			require.IsType(t, c.want, got)
			require.True(t, query.Equal(c.want, got), "want %v, got %v", c.want, got)
		})
	}
	// A constant: the count, typed as the constant.
	require.Equal(t, int32(3), accumulate(t, "$sum", int32(1), M, M, M))
	require.Equal(t, 1.5, accumulate(t, "$sum", 0.5, M, M, M))
}

func TestAvg_types(t *testing.T) {
	require.Nil(t, accumulate(t, "$avg", "$v", "a", nil, query.Missing))
	require.Equal(t, 2.0, accumulate(t, "$avg", "$v", int32(1), int64(3), "x"))
	require.Equal(t, 2.5, accumulate(t, "$avg", "$v", 2, 3))
	got := accumulate(t, "$avg", "$v", dec("1"), 2)
	require.IsType(t, bson.Decimal128{}, got)
	require.True(t, query.Equal(dec("1.5"), got))
	got = accumulate(t, "$avg", "$v", dec("1"), dec("0"), dec("0"))
	require.True(t, query.Compare(got, dec("0.3333333333333333333333333333333333")) == 0, "%v", got)
}

func TestMinMax_nulls(t *testing.T) {
	require.Nil(t, accumulate(t, "$min", "$v", nil, query.Missing))
	require.Nil(t, accumulate(t, "$max", "$v", nil, query.Missing))
	require.Equal(t, 1, accumulate(t, "$min", "$v", nil, 3, 1, query.Missing, "s"))
	require.Equal(t, "s", accumulate(t, "$max", "$v", nil, 3, 1, query.Missing, "s"))
	require.Equal(t, A{1, 2}, accumulate(t, "$max", "$v", A{1, 2}, M{"a": 1}, 5))
}

func TestManual_firstLast(t *testing.T) {
	got := run(t, A{
		M{"$sort": od("item", 1, "date", 1)},
		M{"$group": M{"_id": "$item", "firstSale": M{"$first": "$date"}, "lastSalesDate": M{"$last": "$date"}}},
	}, accSales())
	requireSameSet(t, []Document{
		{"_id": "abc", "firstSale": date("2014-01-01T08:00:00Z"), "lastSalesDate": date("2014-02-15T08:00:00Z")},
		{"_id": "jkl", "firstSale": date("2014-02-03T09:00:00Z"), "lastSalesDate": date("2014-02-03T09:00:00Z")},
		{"_id": "xyz", "firstSale": date("2014-02-03T09:05:00Z"), "lastSalesDate": date("2014-02-15T09:12:00Z")},
	}, got)
	// Missing values are null.
	require.Nil(t, accumulate(t, "$first", "$v", query.Missing, 1))
	require.Nil(t, accumulate(t, "$last", "$v", 1, query.Missing))
	require.Equal(t, 1, accumulate(t, "$last", "$v", query.Missing, 1))
}

func TestManual_pushAddToSet(t *testing.T) {
	got := run(t, A{
		M{"$sort": od("date", 1, "item", 1)},
		M{"$group": M{"_id": "$item", "itemsSold": M{"$push": M{"item": "$item", "quantity": "$quantity"}}, "prices": M{"$addToSet": "$price"}}},
	}, accSales())
	requireSameSet(t, []Document{
		{"_id": "abc", "itemsSold": A{M{"item": "abc", "quantity": 2}, M{"item": "abc", "quantity": 10}}, "prices": A{10}},
		{"_id": "jkl", "itemsSold": A{M{"item": "jkl", "quantity": 1}}, "prices": A{20}},
		{"_id": "xyz", "itemsSold": A{M{"item": "xyz", "quantity": 5}, M{"item": "xyz", "quantity": 10}}, "prices": A{5}},
	}, got)
	// $push keeps nulls and leaves missing values out; $addToSet
	// compares with query.Equal (1 and 1.0 are one value).
	require.Equal(t, A{nil, 1}, accumulate(t, "$push", "$v", nil, query.Missing, 1))
	require.Equal(t, A{}, accumulate(t, "$push", "$v", query.Missing))
	got2 := accumulate(t, "$addToSet", "$v", 1, 1.0, int32(1), "a", "a", M{"x": 1}, M{"x": 1.0}, nil, query.Missing, nil)
	require.Len(t, got2, 4)
	require.Equal(t, A{}, accumulate(t, "$addToSet", "$v"+"x", 1))
	require.Len(t, accumulate(t, "$addToSet", "$v", []byte{1}, bson.Binary{Data: []byte{1}}, bson.Binary{Subtype: 4, Data: []byte{1}}), 2)
}

func TestManual_stdDev(t *testing.T) {
	users := []Document{
		{"_id": 1, "name": "dave123", "quiz": 1, "score": 85},
		{"_id": 2, "name": "dave2", "quiz": 1, "score": 90},
		{"_id": 3, "name": "ahn", "quiz": 1, "score": 71},
		{"_id": 4, "name": "li", "quiz": 2, "score": 96},
		{"_id": 5, "name": "annT", "quiz": 2, "score": 77},
		{"_id": 6, "name": "ty", "quiz": 2, "score": 82},
	}
	got := run(t, A{M{"$group": M{"_id": "$quiz", "stdDev": M{"$stdDevPop": "$score"}, "samp": M{"$stdDevSamp": "$score"}}}, M{"$sort": M{"_id": 1}}}, users)
	require.Len(t, got, 2)
	for _, g := range got {
		require.InDelta(t, 8.04155872120988, g["stdDev"], 1e-12)
		require.InDelta(t, math.Sqrt(97), g["samp"], 1e-12)
	}
	require.Nil(t, accumulate(t, "$stdDevPop", "$v", "a", nil))
	require.Equal(t, 0.0, accumulate(t, "$stdDevPop", "$v", 5))
	require.Nil(t, accumulate(t, "$stdDevSamp", "$v", 5, "x"))
}

func TestManual_mergeObjects(t *testing.T) {
	sales := []Document{
		{"_id": 1, "year": 2017, "item": "A", "quantity": M{"2017Q1": 500, "2017Q2": 500}},
		{"_id": 2, "year": 2016, "item": "A", "quantity": M{"2016Q1": 400, "2016Q2": 300, "2016Q3": 0, "2016Q4": 0}},
		{"_id": 3, "year": 2017, "item": "B", "quantity": M{"2017Q1": 300}},
		{"_id": 4, "year": 2016, "item": "B", "quantity": M{"2016Q3": 100, "2016Q4": 250}},
	}
	got := run(t, A{M{"$group": M{"_id": "$item", "mergedSales": M{"$mergeObjects": "$quantity"}}}}, sales)
	requireSameSet(t, []Document{
		{"_id": "A", "mergedSales": M{"2017Q1": 500, "2017Q2": 500, "2016Q1": 400, "2016Q2": 300, "2016Q3": 0, "2016Q4": 0}},
		{"_id": "B", "mergedSales": M{"2017Q1": 300, "2016Q3": 100, "2016Q4": 250}},
	}, got)
	require.Equal(t, M{"a": 2, "b": 1}, accumulate(t, "$mergeObjects", "$v", M{"a": 1, "b": 1}, nil, query.Missing, M{"a": 2}))
	require.Equal(t, M{}, accumulate(t, "$mergeObjects", "$v", nil))
	_, err := runWith(newHost(nil), Options{}, A{M{"$group": M{"_id": nil, "m": M{"$mergeObjects": "$v"}}}}, []Document{{"v": 1}})
	require.ErrorIs(t, err, errs.ErrExpression)
	require.ErrorContains(t, err, `field "m"`)
}

// The $top, $bottom, $topN, $bottomN, $firstN, $lastN, $maxN, $minN
// pages' gamescores collection.
func gameScores() []Document {
	return []Document{
		{"playerId": "PlayerA", "gameId": "G1", "score": 31},
		{"playerId": "PlayerB", "gameId": "G1", "score": 33},
		{"playerId": "PlayerC", "gameId": "G1", "score": 99},
		{"playerId": "PlayerD", "gameId": "G1", "score": 1},
		{"playerId": "PlayerA", "gameId": "G2", "score": 10},
		{"playerId": "PlayerB", "gameId": "G2", "score": 14},
		{"playerId": "PlayerC", "gameId": "G2", "score": 66},
		{"playerId": "PlayerD", "gameId": "G2", "score": 80},
	}
}

func TestManual_topBottom(t *testing.T) {
	out := A{"$playerId", "$score"}
	cases := []struct {
		name string
		acc  any
		g1   any
		g2   any
	}{
		{"$top", M{"$top": M{"output": out, "sortBy": M{"score": -1}}}, A{"PlayerC", 99}, A{"PlayerD", 80}},
		{"$bottom", M{"$bottom": M{"output": out, "sortBy": M{"score": -1}}}, A{"PlayerD", 1}, A{"PlayerA", 10}},
		{"$topN", M{"$topN": M{"output": out, "sortBy": M{"score": -1}, "n": 3}},
			A{A{"PlayerC", 99}, A{"PlayerB", 33}, A{"PlayerA", 31}}, A{A{"PlayerD", 80}, A{"PlayerC", 66}, A{"PlayerB", 14}}},
		{"$bottomN", M{"$bottomN": M{"output": out, "sortBy": M{"score": -1}, "n": 3}},
			A{A{"PlayerB", 33}, A{"PlayerA", 31}, A{"PlayerD", 1}}, A{A{"PlayerC", 66}, A{"PlayerB", 14}, A{"PlayerA", 10}}},
		{"$firstN", M{"$firstN": M{"input": out, "n": 3}},
			A{A{"PlayerA", 31}, A{"PlayerB", 33}, A{"PlayerC", 99}}, A{A{"PlayerA", 10}, A{"PlayerB", 14}, A{"PlayerC", 66}}},
		{"$lastN", M{"$lastN": M{"input": out, "n": 3}},
			A{A{"PlayerB", 33}, A{"PlayerC", 99}, A{"PlayerD", 1}}, A{A{"PlayerB", 14}, A{"PlayerC", 66}, A{"PlayerD", 80}}},
		{"$maxN", M{"$maxN": M{"input": A{"$score", "$playerId"}, "n": 3}},
			A{A{99, "PlayerC"}, A{33, "PlayerB"}, A{31, "PlayerA"}}, A{A{80, "PlayerD"}, A{66, "PlayerC"}, A{14, "PlayerB"}}},
		{"$minN", M{"$minN": M{"input": A{"$score", "$playerId"}, "n": 3}},
			A{A{1, "PlayerD"}, A{31, "PlayerA"}, A{33, "PlayerB"}}, A{A{10, "PlayerA"}, A{14, "PlayerB"}, A{66, "PlayerC"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := run(t, A{M{"$group": M{"_id": "$gameId", "r": c.acc}}}, gameScores())
			requireSameSet(t, []Document{{"_id": "G1", "r": c.g1}, {"_id": "G2", "r": c.g2}}, got)
			// One game.
			got = run(t, A{M{"$match": M{"gameId": "G1"}}, M{"$group": M{"_id": "$gameId", "r": c.acc}}}, gameScores())
			requireSameDocs(t, []Document{{"_id": "G1", "r": c.g1}}, got)
		})
	}

	// sortBy of several keys must keep their order: a bson.D.
	got := run(t, A{M{"$group": M{"_id": nil, "r": M{"$topN": od("n", 2, "sortBy", od("gameId", -1, "score", 1), "output", "$playerId")}}}}, gameScores())
	require.Equal(t, A{"PlayerA", "PlayerB"}, got[0]["r"])
	require.ErrorIs(t, compileErr(M{"$group": M{"_id": nil, "r": M{"$top": M{"output": "$a", "sortBy": M{"a": 1, "b": 1}}}}}), errs.ErrInvalidOptions)

	// n from the group key (a document: n reads its fields).
	got = run(t, A{M{"$group": M{"_id": M{"gameId": "$gameId", "one": M{"$cond": A{M{"$ifNull": A{"$score", false}}, 1, 2}}}, "r": M{"$firstN": M{"input": "$score", "n": "$one"}}}}}, gameScores()[:2])
	requireSameSet(t, []Document{{"_id": M{"gameId": "G1", "one": 1}, "r": A{31}}}, got)
	t.Run("manual: n from the group key", func(t *testing.T) {
		if !query.IsExprOperator("$eq") {
			t.Skip("$eq is not on this branch")
		}
		got := run(t, A{M{"$group": M{"_id": M{"gameId": "$gameId"}, "gamescores": M{"$firstN": M{"input": "$score", "n": M{"$cond": M{"if": M{"$eq": A{"$gameId", "G2"}}, "then": 1, "else": 3}}}}}}}, gameScores())
		requireSameSet(t, []Document{{"_id": M{"gameId": "G1"}, "gamescores": A{31, 33, 99}}, {"_id": M{"gameId": "G2"}, "gamescores": A{10}}}, got)
	})
	// The manual's null and missing values: both null.
	got = run(t, A{M{"$group": M{"_id": "$gameId", "firstFiveScores": M{"$firstN": M{"input": "$score", "n": 5}}}}}, []Document{
		{"playerId": "PlayerA", "gameId": "G1", "score": 1}, {"playerId": "PlayerB", "gameId": "G1", "score": 2},
		{"playerId": "PlayerC", "gameId": "G1", "score": 3}, {"playerId": "PlayerD", "gameId": "G1"},
		{"playerId": "PlayerE", "gameId": "G1", "score": nil},
	})
	requireSameDocs(t, []Document{{"_id": "G1", "firstFiveScores": A{1, 2, 3, nil, nil}}}, got)
	// $sort before $firstN.
	got = run(t, A{M{"$sort": M{"score": -1}}, M{"$group": M{"_id": "$gameId", "playerId": M{"$firstN": M{"input": A{"$playerId", "$score"}, "n": 3}}}}}, gameScores())
	requireSameSet(t, []Document{
		{"_id": "G2", "playerId": A{A{"PlayerD", 80}, A{"PlayerC", 66}, A{"PlayerB", 14}}},
		{"_id": "G1", "playerId": A{A{"PlayerC", 99}, A{"PlayerB", 33}, A{"PlayerA", 31}}},
	}, got)
	// n bounds.
	for _, n := range []any{0, -1, 1.5, "3", MaxAccumulatorN + 1} {
		require.ErrorIs(t, compileErr(M{"$group": M{"_id": nil, "r": M{"$firstN": M{"input": "$a", "n": n}}}}), errs.ErrInvalidOptions, "n=%v", n)
	}
	require.ErrorIs(t, compileErr(M{"$group": M{"_id": nil, "r": M{"$topN": M{"output": "$a", "sortBy": M{"a": 1}}}}}), errs.ErrInvalidOptions, "no n")
	require.ErrorIs(t, compileErr(M{"$group": M{"_id": nil, "r": M{"$top": M{"output": "$a", "sortBy": M{"a": 1}, "n": 1}}}}), errs.ErrInvalidOptions, "n on $top")

	// Nulls: $firstN keeps them (missing as null), $maxN leaves them out;
	// $top's missing output is null.
	require.Equal(t, A{nil, nil, 1}, accumulate(t, "$firstN", M{"input": "$v", "n": 3}, nil, query.Missing, 1, 2))
	require.Equal(t, A{2, 1}, accumulate(t, "$maxN", M{"input": "$v", "n": 3}, nil, query.Missing, 1, 2))
	require.Equal(t, A{1, 2}, accumulate(t, "$minN", M{"input": "$v", "n": 3}, nil, query.Missing, 1, 2))
	require.Nil(t, accumulate(t, "$top", M{"output": "$v", "sortBy": M{"i": 1}}, query.Missing, 1))
}
