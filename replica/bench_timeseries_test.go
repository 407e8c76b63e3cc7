package replica

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/internal/testutil"
)

// BenchmarkExpireTimeSeries: one TTL pass (or more, until complete) over
// a time-series collection of 60k expired measurements (100 sensors, 600
// each 10 s apart, in 60 s buckets: 10k buckets) on a 3-node cluster on
// raft's in-memory transport, each batch of buckets proposed first; timed
// until every replica has applied the last batch.
//
//	go test -run '^$' -bench ExpireTimeSeries -benchtime 3x -count 5 .
func BenchmarkExpireTimeSeries(b *testing.B) {
	const sensors, per = 100, 600
	c := newClusterOn(b, 3, nil, false, testRaftConfig, false)
	db := func() *ttldb.DB { return c.leader().node.DB() }
	c.writeOnLeader(func(d *ttldb.DB) error {
		_, err := d.CreateCollection(context.Background(), tsColl, ttldb.CollectionOptions{
			TimeSeries:         &ttldb.TimeSeriesOptions{TimeField: "t", MetaField: "sensor", BucketMaxSpanSeconds: tsSpan, BucketRoundingSeconds: tsSpan},
			ExpireAfterSeconds: ttldb.Seconds(60),
		})

		return err
	})
	var cpu int64 // the process's (every node's) CPU time while timed
	var passes time.Duration
	b.ResetTimer()
	b.StopTimer()
	for it := range b.N {
		start := c.clk.Now()
		for s := range sensors {
			ms := make([]ttldb.Document, 0, per)
			for i := range per {
				ms = append(ms, ttldb.Document{"_id": fmt.Sprint(it, "-", s, "-", i), "t": start.Add(time.Duration(i) * tsStep), "sensor": s, "v": i})
			}
			c.insertMeasurements(s, ms)
		}
		c.converged()
		c.clk.Advance(time.Duration(per)*tsStep + 3*time.Minute)
		b.StartTimer()
		t0, cpu0 := time.Now(), testutil.ProcessCPU()
		for {
			res, err := db().RunTTLPass(context.Background())
			if notLeader(err) || errors.Is(err, context.Canceled) {
				continue // the new leader goes on
			}
			require.NoError(b, err)
			if res.Complete {
				break
			}
		}
		passes += time.Since(t0)
		c.converged()
		b.StopTimer()
		cpu += testutil.ProcessCPU() - cpu0
		require.Zero(b, count(b, db(), tsColl, ttldb.Document{}))
	}
	n := float64(sensors * per * b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "measurements/s")
	// The leader's passes alone, before the followers have applied the
	// last batches.
	b.ReportMetric(n/passes.Seconds(), "pass-measurements/s")
	// Steadier than the rates on a shared machine.
	b.ReportMetric(float64(cpu)/n, "cpu-ns/measurement")
}
