// Package prom exports a ttldb DB's metrics to Prometheus: a
// prometheus.Collector that reads DB.Metrics on every scrape.
//
// It is a module of its own (github.com/ttldb/ttldb/prom), so that the
// core module does not depend on prometheus/client_golang.
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(prom.NewCollector(db, prometheus.Labels{"db": "sessions"}))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
package prom

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/ttldb/ttldb"
)

// Collector is a prometheus.Collector for one DB. Each scrape calls
// DB.Metrics once, whose cost does not grow with the documents or the
// backlog (O(collections + indexes)); the collector keeps no state of its
// own. It is safe for concurrent scrapes, and keeps working after the DB is
// closed (showing its last counters).
//
// The metrics, all prefixed ttldb_ (counters end in _total; durations and
// ages are in seconds; ages and durations follow the DB's clock):
//
//	ttl_passes_total                                   TTL monitor passes ended (MongoDB's metrics.ttl.passes)
//	ttl_subpasses_total                                sub-passes ended (metrics.ttl.subPasses)
//	ttl_deleted_documents_total{collection,index}      documents the monitor deleted (metrics.ttl.deletedDocuments, split;
//	                                                   buckets, for a time-series collection)
//	ttl_deleted_measurements_total{collection}         measurements removed from time-series collections
//	ttl_backlog_documents{collection,index}            expired documents not yet deleted
//	ttl_oldest_expired_age_seconds{collection,index}   how long ago the earliest of them expired (0 if none)
//	ttl_failed_delivery_documents{collection,index}    expired documents whose expire hook failed, waiting for a retry
//	ttl_failed_delivery_oldest_age_seconds{collection,index} how long ago the oldest of those failures was
//	ttl_pass_duration_seconds                          histogram of every pass's duration
//	ttl_expiry_lag_seconds{collection,index}           histogram of how late the monitor deleted documents (threshold to deletion)
//	ttl_keep_up_ratio{collection,index}                deleted over became due between the last two passes' ends (1: keeping up)
//	ttl_stalled{collection,index,cause}                1 when the index's backlog grows with nothing deleted (cause: why), else 0 with cause=""
//	ttl_last_pass_timestamp_seconds                    the start of the last pass to end (absent before the first)
//	ttl_index_errors_total                             failed index visits
//	ttl_hook_errors_total                              failed expire-hook calls
//	ttl_hook_panics_total                              expire-hook calls that panicked (also in hook_errors)
//	collection_documents{collection}                   documents stored (expired ones not yet deleted included)
//	collection_bytes{collection}                       memory the collection holds, as WithMemoryLimit accounts it
//	memory_limit_bytes                                 the WithMemoryLimit limit (absent when there is none)
//	change_streams_open                                change streams open
//	change_stream_buffer_ops                           ops the change-stream buffer holds
//	change_stream_buffer_capacity_ops                  its capacity (ChangeStreamBufferOptions.Size)
//	change_stream_max_lag_ops                          the largest lag of any stream, in ops published it has not read
//	change_stream_max_lag_seconds                      the largest lag of any stream, as the age of its oldest unread op
//	change_stream_lag_ops{stream}                      a named stream's lag in ops (ChangeStreamOptions.Name)
//	change_stream_lag_seconds{stream}                  a named stream's lag as the age of its oldest unread op
//	change_stream_buffer_use_ratio{stream}             a named stream's unread ops over the buffer's capacity (1: at its edge)
//	change_stream_events_total{stream}                 events a named stream delivered (restarts with the stream)
//	collection_document_bytes{collection}              the collection's documents in ttldb's encoding (Metrics().DocumentBytes)
//	log_size_bytes                                     the log's files (WithDir)
//	log_segments                                       the log's segment files
//	log_retained_bytes                                 the part of them kept for change streams only (WithLogRetention)
//	log_retained_from_seq                              the oldest op a change stream can resume from
//	log_records_total, log_written_bytes_total         records and bytes written to the log since Open
//	log_syncs_total                                    fsyncs of the log since Open
//	log_sync_duration_seconds                          histogram of those fsyncs' durations
//	snapshots_total, snapshot_bytes                    snapshots written since Open; the current one's size
//	recovery_log_ops, recovery_duration_seconds        what Open loaded from the log, and how long loading took
//	recovery_truncated_bytes                           the bytes of a torn log tail Open cut off
//	transactions_started_total                         transactions started (StartTransaction calls that opened one)
//	transactions_committed_total                       transactions committed (ones with no write included)
//	transactions_aborted_total{cause}                  transactions ended without a commit, by cause: caller, conflict,
//	                                                   lifetime, limit, session, close, error
//	transactions_write_conflicts_total                 transaction writes that failed with ErrWriteConflict
//	transactions_open                                  transactions open now
//	transactions_commit_duration_seconds               histogram of commits' durations (CommitTransaction's call to its return)
//
// The change-stream series appear once the first Watch attached the
// buffer; per-stream series only for streams the application named, so
// that the label set is the application's choice, never one per stream.
// The log's series appear on a DB opened WithDir. The transactions' series
// are there from the start, with a series per abort cause (0 until a
// transaction ends for it).
// Every TTL index has its series from the start (0 until it deletes or
// falls behind); an index that is dropped keeps its deleted-documents
// counter and loses its gauges. The expiry rules of time-series
// collections have the deleted-documents counter only, from their first
// deletion: Metrics counts no backlog for them.
type Collector struct {
	db    *ttldb.DB
	descs descs
}

type descs struct {
	passes, subPasses, deleted       *prometheus.Desc
	deletedMeasurements              *prometheus.Desc
	backlog, oldestAge               *prometheus.Desc
	failedDocs, failedAge            *prometheus.Desc
	passDuration, lastPass           *prometheus.Desc
	indexErrors, hookErr, hookPans   *prometheus.Desc
	documents, bytes, memLimit       *prometheus.Desc
	streamsOpen, bufferOps           *prometheus.Desc
	bufferCap, maxLagOps, maxLag     *prometheus.Desc
	lagOps, lag, bufferUse, events   *prometheus.Desc
	logSize, logRetained, logFirst   *prometheus.Desc
	expiryLag, keepUp, stalled       *prometheus.Desc
	docBytes, logSegments            *prometheus.Desc
	logRecords, logBytes, logSyncs   *prometheus.Desc
	logSyncDur, snapshots, snapBytes *prometheus.Desc
	recOps, recDur, recTruncated     *prometheus.Desc
	txnStarted, txnCommitted         *prometheus.Desc
	txnAborted, txnConflicts         *prometheus.Desc
	txnOpen, txnCommitDur            *prometheus.Desc
}

// NewCollector returns a Collector for db. constLabels are added to every
// metric: give each DB of a process its own value (e.g.
// prometheus.Labels{"db": "sessions"}) so that several collectors register
// side by side in one registry. A const label named "collection", "index",
// "stream" or "cause" clashes with the metrics' own labels: registering the
// collector then fails.
func NewCollector(db *ttldb.DB, constLabels prometheus.Labels) *Collector {
	byIndex := []string{"collection", "index"}
	d := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc("ttldb_"+name, help, labels, constLabels)
	}
	return &Collector{db: db, descs: descs{
		passes:              d("ttl_passes_total", "TTL monitor passes ended, completed or cut short (MongoDB's metrics.ttl.passes).", nil),
		subPasses:           d("ttl_subpasses_total", "TTL monitor sub-passes ended, completed or cut short (MongoDB's metrics.ttl.subPasses).", nil),
		deleted:             d("ttl_deleted_documents_total", "Documents the TTL monitor deleted, by collection and TTL index.", byIndex),
		deletedMeasurements: d("ttl_deleted_measurements_total", "Measurements the TTL monitor removed from time-series collections, with their buckets or trimmed out of them.", []string{"collection"}),
		backlog:             d("ttl_backlog_documents", "Documents expired but not yet deleted, by TTL index (counted to the second).", byIndex),
		oldestAge:           d("ttl_oldest_expired_age_seconds", "How long ago the earliest expired, undeleted document of the TTL index expired; 0 if none.", byIndex),
		failedDocs:          d("ttl_failed_delivery_documents", "Expired documents whose expire hook failed and that wait for a retry, by TTL index.", byIndex),
		failedAge:           d("ttl_failed_delivery_oldest_age_seconds", "How long ago the oldest waiting failed expire-hook delivery of the TTL index failed; 0 if none.", byIndex),
		passDuration:        d("ttl_pass_duration_seconds", "Duration of TTL monitor passes (DB clock).", nil),
		lastPass:            d("ttl_last_pass_timestamp_seconds", "Start of the last TTL monitor pass to end, in Unix seconds (DB clock).", nil),
		indexErrors:         d("ttl_index_errors_total", "TTL index visits that failed.", nil),
		hookErr:             d("ttl_hook_errors_total", "Expire-hook calls that failed, wholly or for some documents.", nil),
		hookPans:            d("ttl_hook_panics_total", "Expire-hook calls that panicked (also counted in ttldb_ttl_hook_errors_total).", nil),
		documents:           d("collection_documents", "Documents stored in the collection, expired ones not yet deleted included.", []string{"collection"}),
		bytes:               d("collection_bytes", "Memory the collection holds, as the DB accounts it for its memory limit.", []string{"collection"}),
		memLimit:            d("memory_limit_bytes", "The DB's memory limit (WithMemoryLimit).", nil),
		streamsOpen:         d("change_streams_open", "Change streams open.", nil),
		bufferOps:           d("change_stream_buffer_ops", "Ops the change-stream buffer holds.", nil),
		bufferCap:           d("change_stream_buffer_capacity_ops", "The change-stream buffer's capacity, in ops.", nil),
		maxLagOps:           d("change_stream_max_lag_ops", "The largest lag of any change stream: ops published that it has not read.", nil),
		maxLag:              d("change_stream_max_lag_seconds", "The largest lag of any change stream: the age of its oldest unread op (DB clock).", nil),
		lagOps:              d("change_stream_lag_ops", "Ops published that the named change stream has not read.", []string{"stream"}),
		lag:                 d("change_stream_lag_seconds", "Age of the oldest op the named change stream has not read (DB clock); 0 when caught up.", []string{"stream"}),
		bufferUse:           d("change_stream_buffer_use_ratio", "The named change stream's unread ops over the buffer's capacity (1: its next op is about to leave the buffer).", []string{"stream"}),
		events:              d("change_stream_events_total", "Events the named change stream delivered.", []string{"stream"}),
		logSize:             d("log_size_bytes", "Bytes in the log's files (WithDir).", nil),
		logRetained:         d("log_retained_bytes", "Bytes of the log kept for change streams only (WithLogRetention).", nil),
		logFirst:            d("log_retained_from_seq", "The oldest op the log holds: a change stream can resume from it.", nil),
		expiryLag:           d("ttl_expiry_lag_seconds", "How late the TTL monitor deleted the index's documents: from a document's threshold to its deletion.", byIndex),
		keepUp:              d("ttl_keep_up_ratio", "Documents the TTL monitor deleted over those that became due, between the ends of its last two passes (1: keeping up).", byIndex),
		stalled:             d("ttl_stalled", "1 when the TTL index's backlog grows while nothing is deleted (the cause label says why), else 0.", append(byIndex, "cause")),
		docBytes:            d("collection_document_bytes", "Bytes of the collection's stored documents in ttldb's encoding.", []string{"collection"}),
		logSegments:         d("log_segments", "Segment files of the log (WithDir).", nil),
		logRecords:          d("log_records_total", "Records written to the log since Open.", nil),
		logBytes:            d("log_written_bytes_total", "Bytes written to the log since Open, framing included.", nil),
		logSyncs:            d("log_syncs_total", "Fsyncs of the log since Open (group commits, flushes, segment changes, Close).", nil),
		logSyncDur:          d("log_sync_duration_seconds", "Duration of the log's fsyncs (DB clock).", nil),
		snapshots:           d("snapshots_total", "Snapshots written since Open (automatic and DB.Snapshot).", nil),
		snapBytes:           d("snapshot_bytes", "Size of the current snapshot file.", nil),
		recOps:              d("recovery_log_ops", "Ops Open applied from the log after the snapshot.", nil),
		recDur:              d("recovery_duration_seconds", "How long Open took to load the data directory (DB clock).", nil),
		recTruncated:        d("recovery_truncated_bytes", "Bytes of a torn log tail Open cut off.", nil),
		txnStarted:          d("transactions_started_total", "Transactions started (StartTransaction calls that opened one).", nil),
		txnCommitted:        d("transactions_committed_total", "Transactions committed, ones with no write included.", nil),
		txnAborted:          d("transactions_aborted_total", "Transactions ended without a commit, by cause (caller, conflict, lifetime, limit, session, close, error).", []string{"cause"}),
		txnConflicts:        d("transactions_write_conflicts_total", "Transaction writes that failed with a write conflict (the transaction is aborted).", nil),
		txnOpen:             d("transactions_open", "Transactions open now.", nil),
		txnCommitDur:        d("transactions_commit_duration_seconds", "Duration of transaction commits, from CommitTransaction's call to its return (DB clock).", nil),
	}}
}

// Describe sends the descriptors of every metric the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	d := &c.descs
	for _, x := range []*prometheus.Desc{
		d.passes, d.subPasses, d.deleted, d.deletedMeasurements, d.backlog, d.oldestAge, d.failedDocs, d.failedAge,
		d.passDuration, d.lastPass, d.indexErrors, d.hookErr, d.hookPans,
		d.documents, d.bytes, d.memLimit,
		d.streamsOpen, d.bufferOps, d.bufferCap, d.maxLagOps, d.maxLag, d.lagOps, d.lag, d.bufferUse, d.events,
		d.logSize, d.logRetained, d.logFirst, d.expiryLag, d.keepUp, d.stalled,
		d.docBytes, d.logSegments, d.logRecords, d.logBytes, d.logSyncs, d.logSyncDur, d.snapshots, d.snapBytes,
		d.recOps, d.recDur, d.recTruncated,
		d.txnStarted, d.txnCommitted, d.txnAborted, d.txnConflicts, d.txnOpen, d.txnCommitDur,
	} {
		ch <- x
	}
}

// Collect reads the DB's metrics once and sends them.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	all := c.db.Metrics()
	m, d := all.TTL, &c.descs
	counter := func(desc *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	counter(d.passes, m.Passes)
	counter(d.subPasses, m.SubPasses)
	for coll, n := range m.DeletedMeasurementsByCollection {
		counter(d.deletedMeasurements, n, coll)
	}
	counter(d.indexErrors, m.IndexErrors)
	counter(d.hookErr, m.HookErrors)
	counter(d.hookPans, m.HookPanics)

	for ref, n := range m.DeletedByIndex {
		counter(d.deleted, n, ref.Collection, ref.Index)
	}
	for ref, b := range m.BacklogByIndex {
		if _, ok := m.DeletedByIndex[ref]; !ok {
			counter(d.deleted, 0, ref.Collection, ref.Index)
		}
		gauge(d.backlog, float64(b.Documents), ref.Collection, ref.Index)
		gauge(d.oldestAge, seconds(b.OldestAge), ref.Collection, ref.Index)
		f := m.FailedDeliveries[ref]
		gauge(d.failedDocs, float64(f.Count), ref.Collection, ref.Index)
		gauge(d.failedAge, seconds(f.OldestAge), ref.Collection, ref.Index)
	}
	for ref, x := range m.ExpiryByIndex {
		histogram(ch, d.expiryLag, x.Lag, ref.Collection, ref.Index)
		gauge(d.keepUp, x.KeepUp, ref.Collection, ref.Index)
		stalled := 0.0
		if x.Stalled {
			stalled = 1
		}
		gauge(d.stalled, stalled, ref.Collection, ref.Index, x.StallCause)
	}
	// A failed delivery of an index gone since (dropped mid-retry) still
	// shows until its index's next retry clears it.
	for ref, f := range m.FailedDeliveries {
		if _, ok := m.BacklogByIndex[ref]; !ok {
			gauge(d.failedDocs, float64(f.Count), ref.Collection, ref.Index)
			gauge(d.failedAge, seconds(f.OldestAge), ref.Collection, ref.Index)
		}
	}

	histogram(ch, d.passDuration, m.PassDurations)
	if !m.LastPassStart.IsZero() {
		gauge(d.lastPass, float64(m.LastPassStart.UnixNano())/1e9)
	}
	for coll, n := range all.Documents {
		gauge(d.documents, float64(n), coll)
	}
	for coll, n := range all.Storage.ByCollection {
		gauge(d.bytes, float64(n), coll)
	}
	for coll, n := range all.DocumentBytes {
		gauge(d.docBytes, float64(n), coll)
	}
	if all.Storage.Limit > 0 {
		gauge(d.memLimit, float64(all.Storage.Limit))
	}
	if cs := all.ChangeStreams; cs.BufferSize > 0 {
		gauge(d.streamsOpen, float64(cs.Open))
		gauge(d.bufferOps, float64(cs.BufferOps))
		gauge(d.bufferCap, float64(cs.BufferSize))
		gauge(d.maxLagOps, float64(cs.MaxLagOps))
		gauge(d.maxLag, seconds(cs.MaxLag))
		for name, s := range cs.Streams {
			gauge(d.lagOps, float64(s.LagOps), name)
			gauge(d.lag, seconds(s.Lag), name)
			gauge(d.bufferUse, s.BufferUse, name)
			counter(d.events, s.Events, name)
		}
	}
	if l := all.Durability; l.LogSize > 0 {
		gauge(d.logSize, float64(l.LogSize))
		gauge(d.logRetained, float64(l.RetainedLogBytes))
		gauge(d.logFirst, float64(l.RetainedFromSeq))
		gauge(d.logSegments, float64(l.LogSegments))
		counter(d.logRecords, l.LogRecords)
		counter(d.logBytes, l.LogBytes)
		counter(d.logSyncs, l.LogSyncs)
		histogram(ch, d.logSyncDur, l.LogSyncDurations)
		counter(d.snapshots, l.Snapshots)
		gauge(d.snapBytes, float64(l.SnapshotBytes))
		gauge(d.recOps, float64(l.RecoveredLogOps))
		gauge(d.recDur, seconds(l.RecoveryDuration))
		gauge(d.recTruncated, float64(l.RecoveryTruncatedBytes))
	}
	tx := all.Transactions
	counter(d.txnStarted, tx.Started)
	counter(d.txnCommitted, tx.Committed)
	for cause, n := range tx.Aborted {
		counter(d.txnAborted, n, cause)
	}
	counter(d.txnConflicts, tx.Conflicts)
	gauge(d.txnOpen, float64(tx.Open))
	histogram(ch, d.txnCommitDur, tx.CommitLatency)
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// histogram sends h as a Prometheus histogram in seconds.
func histogram(ch chan<- prometheus.Metric, desc *prometheus.Desc, h ttldb.DurationHistogram, labels ...string) {
	buckets := make(map[float64]uint64, len(h.Buckets))
	for _, b := range h.Buckets {
		buckets[seconds(b.UpperBound)] = uint64(b.Count)
	}
	ch <- prometheus.MustNewConstHistogram(desc, uint64(h.Count), seconds(h.Sum), buckets, labels...)
}
