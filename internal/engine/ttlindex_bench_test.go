package engine

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkFindExpired measures finding and deleting the k = 100 documents
// expired at the clock's time among n = 1e5 and 1e6 documents (issue 3, rule
// 14). The expired documents are a prefix of the TTL index's date-ordered
// B-tree, so the cost is O(k log n): it must not grow with n beyond the
// log factor.
//
//   - choose: chooseExpired on the TTL index (what a monitor batch does
//     under the lock to find its documents);
//   - pass: a whole RunTTLPass that deletes the k documents (re-inserted,
//     outside the timer, before each iteration).
//
// Run: go test -run '^$' -bench FindExpired -count 3 .
func BenchmarkFindExpired(b *testing.B) {
	const k = 100
	for _, n := range []int{100_000, 1_000_000} {
		db, _ := newTTLDB(b)
		c := db.Collection("bench")
		name := mustCreateIndex(b, c, ttlModel("at", 3600))
		expired := func(tag string) []Document {
			docs := make([]Document, k)
			for i := range docs {
				// Threshold an hour before the clock's time: expired.
				docs[i] = Document{"_id": fmt.Sprintf("%s-%d", tag, i), "at": ttlT0.Add(-2*time.Hour - time.Duration(i)*time.Millisecond)}
			}
			return docs
		}
		mustInsert(b, c, expired("first")...)
		const chunk = 50_000
		for lo := k; lo < n; lo += chunk {
			docs := make([]Document, 0, chunk)
			for i := lo; i < min(lo+chunk, n); i++ {
				// Not expired: thresholds after the clock's time.
				docs = append(docs, Document{"_id": i, "at": ttlT0.Add(time.Duration(i) * time.Millisecond)})
			}
			mustInsert(b, c, docs...)
		}
		s, ix := internalIndex(b, c, name)
		if got := expiryLen(b, c, name); got != n {
			b.Fatalf("TTL index holds %d documents, want %d", got, n)
		}

		b.Run(fmt.Sprintf("n=%d/choose", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.mu.RLock()
				got := s.appendExpired(nil, ix, ttlT0, DefaultMonitorBatchSize) // one monitor batch
				s.mu.RUnlock()
				if len(got) != k {
					b.Fatalf("chose %d expired documents, want %d", len(got), k)
				}
			}
		})
		primed, round := true, 0 // the first k expired documents are in
		b.Run(fmt.Sprintf("n=%d/pass", n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if !primed {
					b.StopTimer()
					round++
					mustInsert(b, c, expired(fmt.Sprint("round", round))...)
					b.StartTimer()
				}
				primed = false
				res, err := db.RunTTLPass(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if res.Deleted != k {
					b.Fatalf("pass deleted %d documents, want %d", res.Deleted, k)
				}
			}
		})
	}
}
