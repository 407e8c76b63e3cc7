package seqlog

import "testing"

// benchN is the pairs each benchmark operation pushes: enough for a few
// hundred pages, small enough for a short run.
const benchN = 200_000

// BenchmarkPush appends benchN consecutive sequences to an empty log.
func BenchmarkPush(b *testing.B) {
	for range b.N {
		var l Log
		for i := range benchN {
			l.Push(uint64(i+1), uint32(i))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchN), "ns/push")
}

// BenchmarkAscendFrom walks the second half of a log of benchN pairs, a
// tenth of them deleted.
func BenchmarkAscendFrom(b *testing.B) {
	var l Log
	for i := range benchN {
		l.Push(uint64(i+1), uint32(i))
	}
	for i := 0; i < benchN; i += 10 {
		l.Delete(uint64(i + 1))
	}
	b.ResetTimer()
	n := 0
	for range b.N {
		l.AscendFrom(benchN/2, func(it Item) bool { n++; return true })
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/item")
}

// BenchmarkDeleteRandom deletes benchN pairs in a shuffled order.
func BenchmarkDeleteRandom(b *testing.B) {
	order := make([]uint64, benchN)
	for i := range order {
		order[i] = uint64(i + 1)
	}
	x := uint64(1)
	for i := len(order) - 1; i > 0; i-- { // a fixed shuffle
		x = x*6364136223846793005 + 1442695040888963407
		j := int(x>>33) % (i + 1)
		order[i], order[j] = order[j], order[i]
	}
	b.StopTimer()
	for range b.N {
		var l Log
		for i := range benchN {
			l.Push(uint64(i+1), uint32(i))
		}
		b.StartTimer()
		for _, s := range order {
			l.Delete(s)
		}
		b.StopTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchN), "ns/delete")
}
