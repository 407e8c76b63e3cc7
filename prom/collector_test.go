package prom_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/prom"
	"github.com/ttldb/ttldb/ttltest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is 1767225600 in Unix seconds.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// openScenario opens a DB on a fake clock and leaves it with every kind of
// figure: collection "sessions" (TTL 0 s on "at") had 3 documents deleted
// by a pass at t0+10s, and a fourth, "bad", whose expire hook fails, waits
// for a retry; collection "carts" (TTL 1 h) has 2 documents expired at
// t0+1h. The clock then reads t0+2h0m10s.
func openScenario(t testing.TB) (*ttldb.DB, *ttltest.Clock) {
	t.Helper()
	clk := ttltest.NewClock(t0)
	hook := func(_ context.Context, b ttldb.ExpiredBatch) error {
		for _, d := range b.Docs {
			if d["_id"] == "bad" {
				return &ttldb.ExpireHookError{Failed: []any{"bad"}, Err: errors.New("archive down")}
			}
		}
		return nil
	}
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}), ttldb.WithOnExpire(hook),
		ttldb.WithMemoryLimit(1<<30))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	for name, secs := range map[string]int32{"sessions": 0, "carts": 3600} {
		_, err := db.Collection(name).CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(secs)})
		require.NoError(t, err)
	}
	_, err = db.Collection("sessions").InsertMany(context.Background(), []ttldb.Document{
		{"_id": "s1", "at": t0}, {"_id": "s2", "at": t0}, {"_id": "s3", "at": t0}, {"_id": "bad", "at": t0},
	})

	require.NoError(t, err)
	_, err = db.Collection("carts").InsertMany(context.Background(), []ttldb.Document{{"_id": "c1", "at": t0}, {"_id": "c2", "at": t0}})
	require.NoError(t, err)
	clk.Advance(10 * time.Second)
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	clk.Advance(2 * time.Hour)
	return db, clk
}

// expected is the exposition of openScenario's DB with the const label
// db="main", but for the accounted bytes, which expectedFor adds.
const expected = `
# HELP ttldb_memory_limit_bytes The DB's memory limit (WithMemoryLimit).
# TYPE ttldb_memory_limit_bytes gauge
ttldb_memory_limit_bytes{db="main"} 1.073741824e+09
# HELP ttldb_collection_documents Documents stored in the collection, expired ones not yet deleted included.
# TYPE ttldb_collection_documents gauge
ttldb_collection_documents{collection="carts",db="main"} 2
ttldb_collection_documents{collection="sessions",db="main"} 1
# HELP ttldb_ttl_backlog_documents Documents expired but not yet deleted, by TTL index (counted to the second).
# TYPE ttldb_ttl_backlog_documents gauge
ttldb_ttl_backlog_documents{collection="carts",db="main",index="at_1"} 2
ttldb_ttl_backlog_documents{collection="sessions",db="main",index="at_1"} 1
# HELP ttldb_ttl_deleted_documents_total Documents the TTL monitor deleted, by collection and TTL index.
# TYPE ttldb_ttl_deleted_documents_total counter
ttldb_ttl_deleted_documents_total{collection="carts",db="main",index="at_1"} 0
ttldb_ttl_deleted_documents_total{collection="sessions",db="main",index="at_1"} 3
# HELP ttldb_ttl_failed_delivery_documents Expired documents whose expire hook failed and that wait for a retry, by TTL index.
# TYPE ttldb_ttl_failed_delivery_documents gauge
ttldb_ttl_failed_delivery_documents{collection="carts",db="main",index="at_1"} 0
ttldb_ttl_failed_delivery_documents{collection="sessions",db="main",index="at_1"} 1
# HELP ttldb_ttl_failed_delivery_oldest_age_seconds How long ago the oldest waiting failed expire-hook delivery of the TTL index failed; 0 if none.
# TYPE ttldb_ttl_failed_delivery_oldest_age_seconds gauge
ttldb_ttl_failed_delivery_oldest_age_seconds{collection="carts",db="main",index="at_1"} 0
ttldb_ttl_failed_delivery_oldest_age_seconds{collection="sessions",db="main",index="at_1"} 7200
# HELP ttldb_ttl_hook_errors_total Expire-hook calls that failed, wholly or for some documents.
# TYPE ttldb_ttl_hook_errors_total counter
ttldb_ttl_hook_errors_total{db="main"} 1
# HELP ttldb_ttl_hook_panics_total Expire-hook calls that panicked (also counted in ttldb_ttl_hook_errors_total).
# TYPE ttldb_ttl_hook_panics_total counter
ttldb_ttl_hook_panics_total{db="main"} 0
# HELP ttldb_ttl_index_errors_total TTL index visits that failed.
# TYPE ttldb_ttl_index_errors_total counter
ttldb_ttl_index_errors_total{db="main"} 0
# HELP ttldb_ttl_last_pass_timestamp_seconds Start of the last TTL monitor pass to end, in Unix seconds (DB clock).
# TYPE ttldb_ttl_last_pass_timestamp_seconds gauge
ttldb_ttl_last_pass_timestamp_seconds{db="main"} 1.76722561e+09
# HELP ttldb_ttl_oldest_expired_age_seconds How long ago the earliest expired, undeleted document of the TTL index expired; 0 if none.
# TYPE ttldb_ttl_oldest_expired_age_seconds gauge
ttldb_ttl_oldest_expired_age_seconds{collection="carts",db="main",index="at_1"} 3610
ttldb_ttl_oldest_expired_age_seconds{collection="sessions",db="main",index="at_1"} 7210
# HELP ttldb_ttl_pass_duration_seconds Duration of TTL monitor passes (DB clock).
# TYPE ttldb_ttl_pass_duration_seconds histogram
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="0.001"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="0.0025"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="0.005"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="0.01"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="0.025"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="0.05"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="0.1"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="0.25"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="0.5"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="1"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="2.5"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="5"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="10"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="30"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="60"} 1
ttldb_ttl_pass_duration_seconds_bucket{db="main",le="+Inf"} 1
ttldb_ttl_pass_duration_seconds_sum{db="main"} 0
ttldb_ttl_pass_duration_seconds_count{db="main"} 1
# HELP ttldb_ttl_passes_total TTL monitor passes ended, completed or cut short (MongoDB's metrics.ttl.passes).
# TYPE ttldb_ttl_passes_total counter
ttldb_ttl_passes_total{db="main"} 1
# HELP ttldb_ttl_subpasses_total TTL monitor sub-passes ended, completed or cut short (MongoDB's metrics.ttl.subPasses).
# TYPE ttldb_ttl_subpasses_total counter
ttldb_ttl_subpasses_total{db="main"} 1
`

// expectedFor is expected with the accounted bytes of db's collections
// (the store's estimate; checked positive).
func expectedFor(t *testing.T, db *ttldb.DB) string {
	t.Helper()
	st := db.Metrics().Storage
	for _, coll := range []string{"carts", "sessions"} {
		require.Positive(t, st.ByCollection[coll], coll)
	}
	require.Len(t, st.ByCollection, 2)
	return expected + fmt.Sprintf(`
# HELP ttldb_collection_bytes Memory the collection holds, as the DB accounts it for its memory limit.
# TYPE ttldb_collection_bytes gauge
ttldb_collection_bytes{collection="carts",db="main"} %d
ttldb_collection_bytes{collection="sessions",db="main"} %d
`, st.ByCollection["carts"], st.ByCollection["sessions"])
}

// Rule: the collector exports Metrics as the exposition above: every
// figure, per-index series for every TTL index (zero while idle), ages in
// seconds from the DB clock, the const label on every series.
func TestCollectorExposition(t *testing.T) {
	db, _ := openScenario(t)
	c := prom.NewCollector(db, prometheus.Labels{"db": "main"})
	want := expectedFor(t, db)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), namesIn(want)...))
}

// namesIn lists the metrics an exposition text declares (its # TYPE
// lines): the series compared, the expiry telemetry's (tested on their
// own, their histograms being long) left out.
func namesIn(exposition string) []string {
	var names []string
	for _, line := range strings.Split(exposition, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			names = append(names, f[2])
		}
	}
	return names
}

// Rule: the histogram has every pass, not only the last, with its
// duration in seconds; counters move with later passes.
func TestCollectorPassDurations(t *testing.T) {
	clk := ttltest.NewClock(t0)
	var step time.Duration
	hook := func(context.Context, ttldb.ExpiredBatch) error { clk.Advance(step); return nil }
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}), ttldb.WithOnExpire(hook))
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	c := db.Collection("c")
	_, err = c.CreateIndex(context.Background(), ttldb.IndexModel{Keys: []ttldb.IndexKey{ttldb.Asc("at")}, ExpireAfterSeconds: ttldb.Seconds(0)})
	require.NoError(t, err)
	for i, d := range []time.Duration{20 * time.Millisecond, 3 * time.Second, 2 * time.Minute} {
		step = d
		_, err := c.InsertOne(context.Background(), ttldb.Document{"_id": i, "at": clk.Now()})
		require.NoError(t, err)
		_, err = db.RunTTLPass(context.Background())
		require.NoError(t, err)
	}
	col := prom.NewCollector(db, nil)
	want := `
# HELP ttldb_ttl_pass_duration_seconds Duration of TTL monitor passes (DB clock).
# TYPE ttldb_ttl_pass_duration_seconds histogram
ttldb_ttl_pass_duration_seconds_bucket{le="0.001"} 0
ttldb_ttl_pass_duration_seconds_bucket{le="0.0025"} 0
ttldb_ttl_pass_duration_seconds_bucket{le="0.005"} 0
ttldb_ttl_pass_duration_seconds_bucket{le="0.01"} 0
ttldb_ttl_pass_duration_seconds_bucket{le="0.025"} 1
ttldb_ttl_pass_duration_seconds_bucket{le="0.05"} 1
ttldb_ttl_pass_duration_seconds_bucket{le="0.1"} 1
ttldb_ttl_pass_duration_seconds_bucket{le="0.25"} 1
ttldb_ttl_pass_duration_seconds_bucket{le="0.5"} 1
ttldb_ttl_pass_duration_seconds_bucket{le="1"} 1
ttldb_ttl_pass_duration_seconds_bucket{le="2.5"} 1
ttldb_ttl_pass_duration_seconds_bucket{le="5"} 2
ttldb_ttl_pass_duration_seconds_bucket{le="10"} 2
ttldb_ttl_pass_duration_seconds_bucket{le="30"} 2
ttldb_ttl_pass_duration_seconds_bucket{le="60"} 2
ttldb_ttl_pass_duration_seconds_bucket{le="+Inf"} 3
ttldb_ttl_pass_duration_seconds_sum 123.02
ttldb_ttl_pass_duration_seconds_count 3
# HELP ttldb_ttl_passes_total TTL monitor passes ended, completed or cut short (MongoDB's metrics.ttl.passes).
# TYPE ttldb_ttl_passes_total counter
ttldb_ttl_passes_total 3
# HELP ttldb_ttl_deleted_documents_total Documents the TTL monitor deleted, by collection and TTL index.
# TYPE ttldb_ttl_deleted_documents_total counter
ttldb_ttl_deleted_documents_total{collection="c",index="at_1"} 3
`
	require.NoError(t, testutil.CollectAndCompare(col, strings.NewReader(want),
		"ttldb_ttl_pass_duration_seconds", "ttldb_ttl_passes_total", "ttldb_ttl_deleted_documents_total"))
}

// Rule: the metric names follow Prometheus's conventions (promlint finds
// nothing), and two DBs register side by side in one registry under
// different db labels; the same label value twice is refused.
func TestCollectorLintAndSideBySide(t *testing.T) {
	a, _ := openScenario(t)
	b, _ := openScenario(t)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(prom.NewCollector(a, prometheus.Labels{"db": "sessions"})))
	require.NoError(t, reg.Register(prom.NewCollector(b, prometheus.Labels{"db": "carts"})))
	err := reg.Register(prom.NewCollector(b, prometheus.Labels{"db": "carts"}))
	var are prometheus.AlreadyRegisteredError
	assert.ErrorAs(t, err, &are, "the same db label twice")
	assert.Error(t, reg.Register(prom.NewCollector(b, prometheus.Labels{"index": "x"})), "a const label that clashes")

	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
	n, err := testutil.GatherAndCount(reg, "ttldb_ttl_passes_total")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	n, err = testutil.GatherAndCount(reg, "ttldb_ttl_backlog_documents")
	require.NoError(t, err)
	assert.Equal(t, 4, n, "two indexes per DB")
}

// Rule: one scrape through promhttp over HTTP (loopback) serves the
// collector's series in the text format.
func TestCollectorScrapeOverHTTP(t *testing.T) {
	db, _ := openScenario(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector(db, prometheus.Labels{"db": "main"}))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain; version=0.0.4") // the text format, not protobuf
	res, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	text := string(body)
	for _, line := range []string{
		`ttldb_ttl_deleted_documents_total{collection="sessions",db="main",index="at_1"} 3`,
		`ttldb_ttl_backlog_documents{collection="carts",db="main",index="at_1"} 2`,
		`ttldb_ttl_oldest_expired_age_seconds{collection="sessions",db="main",index="at_1"} 7210`,
		`ttldb_ttl_pass_duration_seconds_count{db="main"} 1`,
		`ttldb_ttl_hook_errors_total{db="main"} 1`,
	} {
		assert.Contains(t, text, line+"\n")
	}
	// What the scrape served is what the collector gives.
	want := expectedFor(t, db)
	require.NoError(t, testutil.CollectAndCompare(prom.NewCollector(db, prometheus.Labels{"db": "main"}), strings.NewReader(want), namesIn(want)...))
}

// Rule: collecting works after Close (the DB's last counters; no backlog is
// read from a closed DB).
func TestCollectorAfterClose(t *testing.T) {
	db, _ := openScenario(t)
	c := prom.NewCollector(db, nil)
	require.NoError(t, db.Close())
	n := testutil.CollectAndCount(c, "ttldb_ttl_deleted_documents_total")
	assert.Equal(t, 1, n, "the counter survives; the gauges of indexes are gone")
	assert.Equal(t, 2, testutil.CollectAndCount(c, "ttldb_collection_documents"))
	assert.Zero(t, testutil.CollectAndCount(c, "ttldb_ttl_backlog_documents"))
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP ttldb_ttl_passes_total TTL monitor passes ended, completed or cut short (MongoDB's metrics.ttl.passes).
# TYPE ttldb_ttl_passes_total counter
ttldb_ttl_passes_total 1
`), "ttldb_ttl_passes_total"))
}

// Rule: a time-series collection's expiry shows as measurements removed,
// buckets deleted under the collection-level rule's name, and its
// measurements stored.
func TestCollectorTimeSeries(t *testing.T) {
	clk := ttltest.NewClock(t0)
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	ts, err := db.CreateCollection(context.Background(), "weather", ttldb.CollectionOptions{
		TimeSeries:         &ttldb.TimeSeriesOptions{TimeField: "t", MetaField: "sensor"},
		ExpireAfterSeconds: ttldb.Seconds(60),
	})

	require.NoError(t, err)
	for i := range 5 {
		_, err := ts.InsertOne(context.Background(), ttldb.Document{"t": t0.Add(time.Duration(i) * time.Second), "sensor": "roof", "temp": 20 + i})
		require.NoError(t, err)
	}
	_, err = ts.InsertOne(context.Background(), ttldb.Document{"t": t0.Add(3 * time.Hour), "sensor": "roof", "temp": 30})
	require.NoError(t, err)
	clk.Advance(2 * time.Hour)
	_, err = db.RunTTLPass(context.Background())
	require.NoError(t, err)
	want := `
# HELP ttldb_collection_documents Documents stored in the collection, expired ones not yet deleted included.
# TYPE ttldb_collection_documents gauge
ttldb_collection_documents{collection="weather"} 1
# HELP ttldb_ttl_deleted_documents_total Documents the TTL monitor deleted, by collection and TTL index.
# TYPE ttldb_ttl_deleted_documents_total counter
ttldb_ttl_deleted_documents_total{collection="weather",index="$expireAfterSeconds"} 1
# HELP ttldb_ttl_deleted_measurements_total Measurements the TTL monitor removed from time-series collections, with their buckets or trimmed out of them.
# TYPE ttldb_ttl_deleted_measurements_total counter
ttldb_ttl_deleted_measurements_total{collection="weather"} 5
`
	require.NoError(t, testutil.CollectAndCompare(prom.NewCollector(db, nil), strings.NewReader(want),
		"ttldb_collection_documents", "ttldb_ttl_deleted_documents_total", "ttldb_ttl_deleted_measurements_total"))
}

// Rule: the change-stream series appear once a Watch attached the
// buffer; a named stream has its own series (lag in ops and seconds,
// buffer use, events), an unnamed one counts only in the DB-wide ones;
// a DB opened WithDir exports its log's size and retention.
func TestCollectorChangeStreamsAndLog(t *testing.T) {
	clk := ttltest.NewClock(t0)
	db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}), ttldb.WithDir(t.TempDir()),
		ttldb.WithSync(ttldb.SyncAlways))
	require.NoError(t, err)
	defer db.Close()
	c := prom.NewCollector(db, nil)
	assert.Zero(t, testutil.CollectAndCount(c, "ttldb_change_streams_open"), "no series before the first Watch")
	ctx := context.Background()
	audit, err := db.Watch(ctx, nil, ttldb.ChangeStreamOptions{Name: "audit"})
	require.NoError(t, err)
	defer audit.Close(ctx)
	anon, err := db.Watch(ctx, nil)
	require.NoError(t, err)
	defer anon.Close(ctx)
	for i := range 3 {
		_, err := db.Collection("s").InsertOne(ctx, ttldb.Document{"_id": i})
		require.NoError(t, err)
	}
	clk.Advance(2 * time.Second)
	require.True(t, audit.Next(ctx))
	m := db.Metrics()
	require.Greater(t, m.Durability.LogSize, int64(0))
	want := fmt.Sprintf(`
# HELP ttldb_change_stream_buffer_use_ratio The named change stream's unread ops over the buffer's capacity (1: its next op is about to leave the buffer).
# TYPE ttldb_change_stream_buffer_use_ratio gauge
ttldb_change_stream_buffer_use_ratio{stream="audit"} %g
# HELP ttldb_change_stream_events_total Events the named change stream delivered.
# TYPE ttldb_change_stream_events_total counter
ttldb_change_stream_events_total{stream="audit"} 1
# HELP ttldb_change_stream_lag_ops Ops published that the named change stream has not read.
# TYPE ttldb_change_stream_lag_ops gauge
ttldb_change_stream_lag_ops{stream="audit"} 2
# HELP ttldb_change_stream_lag_seconds Age of the oldest op the named change stream has not read (DB clock); 0 when caught up.
# TYPE ttldb_change_stream_lag_seconds gauge
ttldb_change_stream_lag_seconds{stream="audit"} 2
# HELP ttldb_change_stream_max_lag_ops The largest lag of any change stream: ops published that it has not read.
# TYPE ttldb_change_stream_max_lag_ops gauge
ttldb_change_stream_max_lag_ops 4
# HELP ttldb_change_streams_open Change streams open.
# TYPE ttldb_change_streams_open gauge
ttldb_change_streams_open 2
# HELP ttldb_log_retained_from_seq The oldest op the log holds: a change stream can resume from it.
# TYPE ttldb_log_retained_from_seq gauge
ttldb_log_retained_from_seq 1
# HELP ttldb_log_size_bytes Bytes in the log's files (WithDir).
# TYPE ttldb_log_size_bytes gauge
ttldb_log_size_bytes %d
`, 2.0/ttldb.DefaultChangeStreamBufferSize, m.Durability.LogSize)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"ttldb_change_stream_buffer_use_ratio", "ttldb_change_stream_events_total", "ttldb_change_stream_lag_ops",
		"ttldb_change_stream_lag_seconds", "ttldb_change_stream_max_lag_ops", "ttldb_change_streams_open",
		"ttldb_log_retained_from_seq", "ttldb_log_size_bytes"))
	assert.Equal(t, 1, testutil.CollectAndCount(c, "ttldb_change_stream_lag_ops"), "the unnamed stream has no series of its own")
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// Rule: each TTL index has its expiry-lag histogram (seconds, the
// engine's buckets), its keeping-up ratio and its stalled gauge with the
// cause as a label.
func TestCollectorExpiryTelemetry(t *testing.T) {
	db, _ := openScenario(t)
	c := prom.NewCollector(db, nil)
	m := db.Metrics().TTL.ExpiryByIndex
	sessions := m[ttldb.IndexRef{Collection: "sessions", Index: "at_1"}]
	require.Equal(t, int64(3), sessions.Lag.Count, "the three sessions the pass deleted")
	want := `
# HELP ttldb_ttl_keep_up_ratio Documents the TTL monitor deleted over those that became due, between the ends of its last two passes (1: keeping up).
# TYPE ttldb_ttl_keep_up_ratio gauge
ttldb_ttl_keep_up_ratio{collection="carts",index="at_1"} 1
ttldb_ttl_keep_up_ratio{collection="sessions",index="at_1"} 1
# HELP ttldb_ttl_stalled 1 when the TTL index's backlog grows while nothing is deleted (the cause label says why), else 0.
# TYPE ttldb_ttl_stalled gauge
ttldb_ttl_stalled{cause="monitor disabled",collection="carts",index="at_1"} 1
ttldb_ttl_stalled{cause="monitor disabled",collection="sessions",index="at_1"} 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "ttldb_ttl_keep_up_ratio", "ttldb_ttl_stalled"))
	// The histogram: one series per bucket, the count and the sum.
	n := testutil.CollectAndCount(c, "ttldb_ttl_expiry_lag_seconds")
	assert.Equal(t, 2, n, "one histogram per TTL index")
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != "ttldb_ttl_expiry_lag_seconds" {
			continue
		}
		for _, mm := range f.GetMetric() {
			h := mm.GetHistogram()
			if mm.GetLabel()[0].GetValue() == "sessions" {
				assert.Equal(t, uint64(3), h.GetSampleCount())
				assert.InDelta(t, sessions.Lag.Sum.Seconds(), h.GetSampleSum(), 1e-9)
			}
			assert.Len(t, h.GetBucket(), len(sessions.Lag.Buckets))
		}
	}
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// Rule: a DB opened WithDir exports its log (records, bytes, fsyncs and
// their durations, segments), its snapshots and what Open recovered; the
// per-collection document bytes are exported too.
func TestCollectorDurability(t *testing.T) {
	clk := ttltest.NewClock(t0)
	dir := t.TempDir()
	open := func() *ttldb.DB {
		db, err := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}), ttldb.WithDir(dir),
			ttldb.WithSync(ttldb.SyncAlways))
		require.NoError(t, err)
		return db
	}
	db := open()
	for i := range 3 {
		_, err := db.Collection("s").InsertOne(context.Background(), ttldb.Document{"_id": i})
		require.NoError(t, err)
	}
	require.NoError(t, db.Snapshot(context.Background()))
	_, err := db.Collection("s").InsertOne(context.Background(), ttldb.Document{"_id": 9})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	db = open()
	defer db.Close()
	c := prom.NewCollector(db, nil)
	m := db.Metrics()
	want := fmt.Sprintf(`
# HELP ttldb_collection_document_bytes Bytes of the collection's stored documents in ttldb's encoding.
# TYPE ttldb_collection_document_bytes gauge
ttldb_collection_document_bytes{collection="s"} %d
# HELP ttldb_recovery_log_ops Ops Open applied from the log after the snapshot.
# TYPE ttldb_recovery_log_ops gauge
ttldb_recovery_log_ops 1
# HELP ttldb_snapshot_bytes Size of the current snapshot file.
# TYPE ttldb_snapshot_bytes gauge
ttldb_snapshot_bytes %d
# HELP ttldb_log_segments Segment files of the log (WithDir).
# TYPE ttldb_log_segments gauge
ttldb_log_segments %d
`, m.DocumentBytes["s"], m.Durability.SnapshotBytes, m.Durability.LogSegments)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"ttldb_collection_document_bytes", "ttldb_recovery_log_ops", "ttldb_snapshot_bytes", "ttldb_log_segments"))
	for _, name := range []string{"ttldb_log_records_total", "ttldb_log_written_bytes_total", "ttldb_log_syncs_total",
		"ttldb_log_sync_duration_seconds", "ttldb_snapshots_total", "ttldb_recovery_duration_seconds", "ttldb_recovery_truncated_bytes"} {
		assert.Equal(t, 1, testutil.CollectAndCount(c, name), name)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
}
