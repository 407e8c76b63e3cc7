package aggregate

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ttldb/ttldb/internal/errs"
	"github.com/ttldb/ttldb/internal/query"
)

func projectBooks() []Document {
	return []Document{{"_id": 1, "title": "abc123", "isbn": "0001122223334", "author": M{"last": "zzz", "first": "aaa"}, "copies": 5, "lastModified": "2016-07-28"}}
}

func TestManual_project(t *testing.T) {
	cases := []struct {
		name string
		spec any
		want Document
	}{
		{"include fields", M{"title": 1, "author": 1}, M{"_id": 1, "title": "abc123", "author": M{"last": "zzz", "first": "aaa"}}},
		{"suppress _id", M{"_id": 0, "title": 1, "author": true}, M{"title": "abc123", "author": M{"last": "zzz", "first": "aaa"}}},
		{"exclude fields", M{"lastModified": 0}, M{"_id": 1, "title": "abc123", "isbn": "0001122223334", "author": M{"last": "zzz", "first": "aaa"}, "copies": 5}},
		{"exclude embedded dotted", M{"author.first": 0, "lastModified": 0}, M{"_id": 1, "title": "abc123", "isbn": "0001122223334", "author": M{"last": "zzz"}, "copies": 5}},
		{"exclude embedded nested", M{"author": M{"first": false}, "lastModified": 0}, M{"_id": 1, "title": "abc123", "isbn": "0001122223334", "author": M{"last": "zzz"}, "copies": 5}},
		{"_id kept in an exclusion", M{"_id": 1, "lastModified": 0, "isbn": 0}, M{"_id": 1, "title": "abc123", "author": M{"last": "zzz", "first": "aaa"}, "copies": 5}},
		{"only _id excluded", M{"_id": 0}, M{"title": "abc123", "isbn": "0001122223334", "author": M{"last": "zzz", "first": "aaa"}, "copies": 5, "lastModified": "2016-07-28"}},
		{"rename and compute", M{"title": 1, "lastName": "$author.last", "copiesSold": "$copies", "lit": M{"$literal": 1}}, M{"_id": 1, "title": "abc123", "lastName": "zzz", "copiesSold": 5, "lit": 1}},
		{"$$REMOVE", M{"title": 1, "gone": "$$REMOVE", "nope": "$missing"}, M{"_id": 1, "title": "abc123"}},
		{"conditional $$REMOVE", M{"title": 1, "author.first": 1, "author.last": 1, "author.middle": M{"$cond": M{"if": M{"$not": "$author.middle"}, "then": "$$REMOVE", "else": "$author.middle"}}}, M{"_id": 1, "title": "abc123", "author": M{"last": "zzz", "first": "aaa"}}},
		{"new sub-document", M{"stats": M{"pv": "$copies", "t": "$title"}}, M{"_id": 1, "stats": M{"pv": 5, "t": "abc123"}}},
		{"new array field", M{"arr": A{"$copies", "$title", "$someField"}}, M{"_id": 1, "arr": A{5, "abc123", nil}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := run(t, A{M{"$project": c.spec}}, projectBooks())
			require.Len(t, got, 1)
			requireSameDocs(t, []Document{c.want}, got)
		})
	}

	t.Run("include embedded fields through arrays", func(t *testing.T) {
		bookmarks := []Document{
			{"_id": 1, "user": "1234", "stop": M{"title": "book1", "author": "xyz", "page": 32}},
			{"_id": 2, "user": "7890", "stop": A{M{"title": "book2", "author": "abc", "page": 5}, M{"title": "book3", "author": "ijk", "page": 100}}},
			{"_id": 3, "stop": A{1, M{"page": 1}, A{M{"title": "nested"}}}},
			{"_id": 4, "stop": "scalar"},
		}
		want := []Document{
			{"_id": 1, "stop": M{"title": "book1"}},
			{"_id": 2, "stop": A{M{"title": "book2"}, M{"title": "book3"}}},
			{"_id": 3, "stop": A{M{}, A{M{"title": "nested"}}}},
			{"_id": 4},
		}
		requireSameDocs(t, want, run(t, A{M{"$project": M{"stop.title": 1}}}, bookmarks))
		requireSameDocs(t, want, run(t, A{M{"$project": M{"stop": M{"title": 1}}}}, bookmarks))
	})

	t.Run("computed sub-fields replace what is not a document", func(t *testing.T) {
		got := run(t, A{M{"$project": M{"a.b": M{"$literal": 1}}}}, []Document{{"_id": 1, "a": 1}, {"_id": 2}, {"_id": 3, "a": M{"b": 5, "c": 6}}})
		requireSameDocs(t, []Document{{"_id": 1, "a": M{"b": 1}}, {"_id": 2, "a": M{"b": 1}}, {"_id": 3, "a": M{"b": 1}}}, got)
		// Through an array: documents keep their included fields, others
		// become documents of the computed ones.
		got = run(t, A{M{"$project": M{"a.c": 1, "a.b": "$x"}}}, []Document{{"_id": 1, "x": 7, "a": A{1, M{"c": 2, "d": 3}, A{M{"c": 4}}}}})
		requireSameDocs(t, []Document{{"_id": 1, "a": A{M{"b": 7}, M{"c": 2, "b": 7}, A{M{"c": 4, "b": 7}}}}}, got)
	})

	t.Run("the input is not changed", func(t *testing.T) {
		in := projectBooks()
		run(t, A{M{"$project": M{"author.first": 0}}}, in)
		require.Equal(t, projectBooks()[0]["author"], in[0]["author"])
	})

	t.Run("computed with $substr", func(t *testing.T) {
		if !query.IsExprOperator("$substr") {
			t.Skip("$substr is not on this branch")
		}
		got := run(t, A{M{"$project": M{"title": 1, "isbn": M{"prefix": M{"$substr": A{"$isbn", 0, 3}}, "group": M{"$substr": A{"$isbn", 3, 2}}}}}}, projectBooks())
		requireSameDocs(t, []Document{{"_id": 1, "title": "abc123", "isbn": M{"prefix": "000", "group": "11"}}}, got)
	})

	for name, spec := range map[string]any{
		"empty":                 M{},
		"mixed":                 M{"a": 1, "b": 0},
		"mixed computed":        M{"a": "$x", "b": 0},
		"collision":             M{"a": 1, "a.b": 1},
		"empty sub":             M{"a": M{}},
		"dollar field":          M{"$a": 1},
		"bad expression":        M{"a": M{"$nope": 1}},
		"operator beside field": M{"a": M{"$literal": 1, "b": 1}},
		"not a document":        "a",
		"empty path component":  M{"a..b": 1},
	} {
		err := compileErr(M{"$project": spec})
		require.ErrorIs(t, err, errs.ErrInvalidOptions, name)
		require.Contains(t, err.Error(), "$project", name)
	}
}

func TestManual_addFields(t *testing.T) {
	vehicles := []Document{
		{"_id": 1, "type": "car", "specs": M{"doors": 4, "wheels": 4}},
		{"_id": 2, "type": "motorcycle", "specs": M{"doors": 0, "wheels": 2}},
		{"_id": 3, "type": "jet ski"},
	}
	want := []Document{
		{"_id": 1, "type": "car", "specs": M{"doors": 4, "wheels": 4, "fuel_type": "unleaded"}},
		{"_id": 2, "type": "motorcycle", "specs": M{"doors": 0, "wheels": 2, "fuel_type": "unleaded"}},
		{"_id": 3, "type": "jet ski", "specs": M{"fuel_type": "unleaded"}},
	}
	for _, name := range []string{"$addFields", "$set"} {
		requireSameDocs(t, want, run(t, A{M{name: M{"specs.fuel_type": "unleaded"}}}, vehicles))
		requireSameDocs(t, want, run(t, A{M{name: M{"specs": M{"fuel_type": "unleaded"}}}}, vehicles))
	}
	require.Equal(t, M{"doors": 4, "wheels": 4}, vehicles[0]["specs"], "the input is not changed")

	// Overwriting an existing field.
	requireSameDocs(t, []Document{{"_id": 1, "dogs": 10, "cats": 20}}, run(t, A{M{"$addFields": M{"cats": 20}}}, []Document{{"_id": 1, "dogs": 10, "cats": 15}}))
	// Replacing _id with another field; expressions read the input.
	got := run(t, A{M{"$addFields": M{"_id": "$item", "item": "fruit"}}}, []Document{
		{"_id": 1, "item": "tangerine", "type": "citrus"},
		{"_id": 2, "item": "lemon", "type": "citrus"},
	})
	requireSameDocs(t, []Document{
		{"_id": "tangerine", "item": "fruit", "type": "citrus"},
		{"_id": "lemon", "item": "fruit", "type": "citrus"},
	}, got)
	// Literal numbers and booleans are values, not flags; $$REMOVE removes.
	got = run(t, A{M{"$set": M{"one": 1, "no": false, "dogs": "$$REMOVE", "arr.x": 1}}}, []Document{{"_id": 1, "dogs": 10, "arr": A{M{"y": 2}, 3}}})
	requireSameDocs(t, []Document{{"_id": 1, "one": 1, "no": false, "arr": A{M{"y": 2, "x": 1}, M{"x": 1}}}}, got)
	// An empty $addFields passes documents through.
	requireSameDocs(t, vehicles, run(t, A{M{"$addFields": M{}}}, vehicles))

	t.Run("with $sum and $add", func(t *testing.T) {
		if !query.IsExprOperator("$add") || !query.IsExprOperator("$sum") {
			t.Skip("$add and $sum are not on this branch")
		}
		scores := []Document{
			{"_id": 1, "student": "Maya", "homework": A{10, 5, 10}, "quiz": A{10, 8}, "extraCredit": 0},
			{"_id": 2, "student": "Ryan", "homework": A{5, 6, 5}, "quiz": A{8, 8}, "extraCredit": 8},
		}
		got := run(t, A{
			M{"$addFields": M{"totalHomework": M{"$sum": "$homework"}, "totalQuiz": M{"$sum": "$quiz"}}},
			M{"$addFields": M{"totalScore": M{"$add": A{"$totalHomework", "$totalQuiz", "$extraCredit"}}}},
		}, scores)
		requireSameDocs(t, []Document{
			{"_id": 1, "student": "Maya", "homework": A{10, 5, 10}, "quiz": A{10, 8}, "extraCredit": 0, "totalHomework": 25, "totalQuiz": 18, "totalScore": 43},
			{"_id": 2, "student": "Ryan", "homework": A{5, 6, 5}, "quiz": A{8, 8}, "extraCredit": 8, "totalHomework": 16, "totalQuiz": 16, "totalScore": 40},
		}, got)
	})

	for name, spec := range map[string]any{
		"dollar field":   M{"$a": 1},
		"bad expression": M{"a": M{"$nope": 1}},
		"collision":      M{"a": 1, "a.b": 1},
		"not a document": A{1},
	} {
		err := compileErr(M{"$addFields": spec})
		require.ErrorIs(t, err, errs.ErrInvalidOptions, name)
		require.Contains(t, err.Error(), "$addFields", name)
	}
}

func TestManual_unset(t *testing.T) {
	books := func() []Document {
		return []Document{
			{"_id": 1, "title": "Antelope Antics", "isbn": "0001122223334", "author": M{"last": "An", "first": "Auntie"}, "copies": A{M{"warehouse": "A", "qty": 5}, M{"warehouse": "B", "qty": 15}}},
			{"_id": 2, "title": "Bees Babble", "isbn": "999999999333", "author": M{"last": "Bumble", "first": "Bee"}, "copies": A{M{"warehouse": "A", "qty": 2}, M{"warehouse": "B", "qty": 5}}},
		}
	}
	requireSameDocs(t, []Document{
		{"_id": 1, "title": "Antelope Antics", "isbn": "0001122223334", "author": M{"last": "An", "first": "Auntie"}},
		{"_id": 2, "title": "Bees Babble", "isbn": "999999999333", "author": M{"last": "Bumble", "first": "Bee"}},
	}, run(t, A{M{"$unset": "copies"}}, books()))
	requireSameDocs(t, []Document{
		{"_id": 1, "title": "Antelope Antics", "author": M{"last": "An", "first": "Auntie"}},
		{"_id": 2, "title": "Bees Babble", "author": M{"last": "Bumble", "first": "Bee"}},
	}, run(t, A{M{"$unset": A{"isbn", "copies"}}}, books()))
	requireSameDocs(t, []Document{
		{"_id": 1, "title": "Antelope Antics", "author": M{"last": "An"}, "copies": A{M{"qty": 5}, M{"qty": 15}}},
		{"_id": 2, "title": "Bees Babble", "author": M{"last": "Bumble"}, "copies": A{M{"qty": 2}, M{"qty": 5}}},
	}, run(t, A{M{"$unset": A{"isbn", "author.first", "copies.warehouse"}}}, books()))
	for name, arg := range map[string]any{"empty": A{}, "number": 1, "number in list": A{"a", 1}, "dollar": "$a"} {
		require.ErrorIs(t, compileErr(M{"$unset": arg}), errs.ErrInvalidOptions, name)
	}
}

func TestManual_replaceRoot(t *testing.T) {
	people := []Document{
		{"_id": 1, "name": "Arlene", "age": 34, "pets": M{"dogs": 2, "cats": 1}},
		{"_id": 2, "name": "Sam", "age": 41, "pets": M{"cats": 1, "fish": 3}},
		{"_id": 3, "name": "Maria", "age": 25},
	}
	got := run(t, A{M{"$match": M{"pets": M{"$exists": true}}}, M{"$replaceRoot": M{"newRoot": "$pets"}}}, people)
	requireSameDocs(t, []Document{{"dogs": 2, "cats": 1}, {"cats": 1, "fish": 3}}, got)
	// A missing newRoot is an error naming the stage.
	_, err := runWith(newHost(nil), Options{}, A{M{"$replaceRoot": M{"newRoot": "$pets"}}}, people)
	require.Error(t, err)
	var se *StageError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "$replaceRoot", se.Stage)
	require.Contains(t, err.Error(), "missing")
	// $replaceWith, with a document expression.
	got = run(t, A{M{"$replaceWith": M{"n": "$name", "a": "$age"}}}, people[:1])
	requireSameDocs(t, []Document{{"n": "Arlene", "a": 34}}, got)
	_, err = runWith(newHost(nil), Options{}, A{M{"$replaceWith": "$name"}}, people)
	require.ErrorContains(t, err, "string")

	t.Run("with $mergeObjects", func(t *testing.T) {
		if !query.IsExprOperator("$mergeObjects") {
			t.Skip("$mergeObjects is not on this branch")
		}
		got := run(t, A{M{"$replaceRoot": M{"newRoot": M{"$mergeObjects": A{M{"dogs": 0, "cats": 0, "birds": 0, "fish": 0}, "$pets"}}}}}, people)
		requireSameDocs(t, []Document{
			{"dogs": 2, "cats": 1, "birds": 0, "fish": 0},
			{"dogs": 0, "cats": 1, "birds": 0, "fish": 3},
			{"dogs": 0, "cats": 0, "birds": 0, "fish": 0},
		}, got)
	})
	for name, arg := range map[string]any{"no newRoot": M{}, "extra": M{"newRoot": "$a", "x": 1}, "not a doc": 1} {
		require.ErrorIs(t, compileErr(M{"$replaceRoot": arg}), errs.ErrInvalidOptions, name)
	}
}
