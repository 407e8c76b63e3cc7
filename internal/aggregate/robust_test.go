package aggregate

import (
	"context"
	"math"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// Every stage over documents of every kind of value: errors are fine,
// panics are not.
func TestStages_anyValueNoPanic(t *testing.T) {
	values := []any{
		nil, true, "s", int32(1), 2, 2.5, math.NaN(), math.Inf(1), dec("1.5"), time.Unix(0, 0).UTC(), codec.ObjectID{1},
		[]byte{1}, bson.Regex{Pattern: "x"}, bson.Timestamp{T: 1}, query.MinKey, query.MaxKey,
		A{}, A{1, A{2}}, []string{"a"}, []int{1}, []map[string]any{{"b": 1}}, M{}, M{"b": A{M{"c": 1}}},
	}
	var docs []Document
	for i, v := range values {
		docs = append(docs, Document{"_id": i, "a": v, "k": v})
		docs = append(docs, Document{"_id": i + 100, "a": M{"b": v}, "k": A{v}})
	}
	docs = append(docs, Document{"_id": 1000})
	stages := []any{
		M{"$match": M{"a": M{"$gt": 1}}},
		M{"$project": M{"a.b": 1}}, M{"$project": M{"a.b": 0}}, M{"$project": M{"x": "$a.b", "a.b.c": "$k"}},
		M{"$addFields": M{"a.b.c": "$k"}}, M{"$unset": "a.b"},
		M{"$replaceWith": M{"$ifNull": A{"$a", M{}}}},
		M{"$group": M{"_id": "$a", "s": M{"$sum": "$k"}, "v": M{"$avg": "$k"}, "m": M{"$min": "$k"}, "x": M{"$max": "$k"},
			"p": M{"$push": "$k"}, "t": M{"$addToSet": "$k"}, "d": M{"$stdDevPop": "$k"}, "e": M{"$stdDevSamp": "$k"},
			"top": M{"$topN": M{"n": 2, "sortBy": M{"k": 1}, "output": "$k"}}, "mx": M{"$maxN": M{"n": 2, "input": "$k"}},
			"f": M{"$firstN": M{"n": 2, "input": "$k"}}, "l": M{"$lastN": M{"n": 2, "input": "$k"}}, "c": M{"$count": M{}}}},
		M{"$group": M{"_id": nil, "o": M{"$mergeObjects": "$a"}}},
		M{"$sort": od("a", 1, "k", -1)}, M{"$sort": M{"a.b": -1}},
		M{"$unwind": "$a"}, M{"$unwind": M{"path": "$a.b", "includeArrayIndex": "a.i", "preserveNullAndEmptyArrays": true}},
		M{"$count": "n"}, M{"$sortByCount": "$a"},
		M{"$bucket": M{"groupBy": "$a", "boundaries": A{0, 2, 5}, "default": "other"}},
		M{"$sample": M{"size": 3}},
		M{"$lookup": M{"from": "c", "localField": "a", "foreignField": "a", "as": "a.j"}},
		M{"$redact": M{"$cond": A{M{"$ifNull": A{"$b", false}}, "$$PRUNE", "$$DESCEND"}}},
		M{"$unionWith": "c"},
	}
	before := make([]any, len(docs))
	for i, d := range docs {
		before[i] = codec.CopyValue(map[string]any(d))
	}
	h := newHost(map[string][]Document{"c": docs})
	total := 0
	for _, st := range stages {
		for _, second := range stages {
			p, err := Compile(A{st, second}, Options{Seed: 1})
			if err != nil {
				t.Fatalf("%v: %v", st, err)
			}
			in := append([]Document(nil), docs...)
			out, _ := Collect(context.Background(), p.Run(context.Background(), h, &SliceStream{Docs: in}, 0))
			total += len(out)
		}
	}
	if total < 1000 {
		t.Fatalf("only %d documents out of all the runs", total)
	}
	for i, d := range docs {
		if !query.Equal(before[i], map[string]any(d)) {
			t.Fatalf("document %d changed: %v, was %v", i, d, before[i])
		}
	}
}

// A compiled pipeline runs in several goroutines at once (each run its
// own state).
func TestPipeline_concurrentRuns(t *testing.T) {
	p, err := Compile(A{
		M{"$project": M{"g": "$x", "pad": 1}},
		M{"$group": M{"_id": "$g", "top": M{"$topN": M{"n": 2, "sortBy": M{"_id": 1}, "output": "$_id"}}, "n": M{"$sum": 1}}},
		M{"$sample": M{"size": 5}},
		M{"$sort": M{"_id": 1}},
	}, Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []Document, 4)
	for range 4 {
		go func() {
			out, err := Collect(context.Background(), p.Run(context.Background(), newHost(nil), &SliceStream{Docs: bigDocs(200)}, 0))
			if err != nil {
				t.Error(err)
			}
			done <- out
		}()
	}
	first := <-done
	for range 3 {
		requireSameDocs(t, first, <-done)
	}
}
