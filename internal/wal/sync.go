package wal

import (
	"fmt"
	"runtime"
	"slices"
)

// Wait returns once the record seq (written by a Write that returned nil)
// is as durable as the policy promises: under SyncAlways, fsynced. Callers
// waiting together share fsyncs (group commit): one of them, the leader,
// fsyncs everything written so far while the others wait for it, and
// the records written during that fsync share the next one. Under the
// other policies Wait returns at once. It returns the log's failure if
// the log failed before seq was known to be synced.
//
// The commit delay: writers in a closed loop (each writes again as soon
// as its Wait returns) would otherwise split into two groups taking
// turns, one writing while the other's fsync runs, each fsync covering
// half of them. So a leader that finds fewer callers waiting than the
// last fsync had when it ended (the others are about to write again)
// waits for them, yielding the processor, at most half of the last
// fsync's time (PostgreSQL's commit_delay, bounded by the disk's own
// speed): the next fsync covers them all, and writers wait at most half
// an fsync more. A lone writer never waits.
func (l *Log) Wait(seq uint64) error {
	if l.opts.Sync != SyncAlways {
		return l.err()
	}
	return l.syncTo(seq)
}

// Append is Write then Wait.
func (l *Log) Append(seq uint64, payload []byte) error {
	if err := l.Write(seq, payload); err != nil {
		return err
	}
	return l.Wait(seq)
}

// Sync fsyncs every record written so far, whatever the policy. On a
// failed log it returns the failure.
func (l *Log) Sync() error {
	l.mu.Lock()
	last := l.lastSeq
	err := l.writableState()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return l.syncTo(last)
}

// syncTo returns once every record up to seq is fsynced: at once if one
// was, after the running fsync if it covers seq, or after an fsync this
// caller leads.
func (l *Log) syncTo(seq uint64) error {
	if l.durable.Load() >= seq {
		return nil
	}
	l.groupMu.Lock()
	l.waitSeqs = append(l.waitSeqs, seq)
	defer func() {
		i := slices.Index(l.waitSeqs, seq)
		l.waitSeqs[i] = l.waitSeqs[len(l.waitSeqs)-1]
		l.waitSeqs = l.waitSeqs[:len(l.waitSeqs)-1]
		l.groupMu.Unlock()
	}()
	for l.durable.Load() < seq {
		if err := l.err(); err != nil {
			return err
		}
		if l.syncing {
			l.groupCond.Wait()
			continue
		}
		l.syncing = true
		l.groupMu.Unlock()
		err := l.leadSync(seq)
		l.groupMu.Lock()
		l.syncing = false
		l.groupCond.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}

// gatherRounds bounds how many times a leader yields to let writers add
// records before it fsyncs.
const gatherRounds = 16

// leadSync fsyncs the active segment for everything written so far. Before
// it looks, it yields the processor as long as writers keep adding records
// (at most gatherRounds times): the writers the last fsync released are
// runnable and about to write their next record, and one fsync can cover
// them all instead of half of them. No clock is read.
func (l *Log) leadSync(seq uint64) error {
	for range gatherRounds {
		before := l.written.Load()
		runtime.Gosched()
		if l.written.Load() == before {
			break
		}
	}
	l.commitDelay()
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.durable.Load() >= seq {
		return nil // a roll or Close synced it meanwhile
	}
	l.mu.Lock()
	if err := l.err(); err != nil {
		l.mu.Unlock()
		return err
	}
	if l.f == nil {
		// Close closed the file; it synced everything before, so only a
		// seq never written gets here.
		l.mu.Unlock()
		return ErrClosed
	}
	if seq > l.lastSeq {
		l.mu.Unlock()
		return fmt.Errorf("wal: seq %d was not written (the last is %d)", seq, l.lastSeq)
	}
	if err := l.writePending(); err != nil {
		l.mu.Unlock()
		return err
	}
	f, target := l.f, l.lastSeq
	l.mu.Unlock()
	// The fsync runs without mu: writers go on appending meanwhile, and the
	// next fsync covers them. syncMu keeps f from being closed.
	took, err := l.fsync(f)
	if err != nil {
		return l.fail(err)
	}
	l.durable.Store(target)
	l.groupMu.Lock()
	l.lastSync, l.lastGroup = took, len(l.waitSeqs)
	l.groupMu.Unlock()
	return nil
}

// flusher runs until Close. Under SyncEverySecond it writes the buffer and
// fsyncs about once per FlushInterval; under SyncNever with a buffer it
// only writes the buffer. A failure fails the log, which the next Write
// reports.
func (l *Log) flusher() {
	defer close(l.done)
	for {
		t := l.opts.NewTimer(l.opts.FlushInterval)
		select {
		case <-l.stop:
			t.Stop()
			return
		case <-t.C():
		}
		if l.opts.Sync == SyncEverySecond {
			_ = l.syncTo(l.written.Load())
			continue
		}
		l.mu.Lock() // SyncNever with a buffer: write it, sync nothing
		if l.writableState() == nil {
			_ = l.writePending()
		}
		l.mu.Unlock()
	}
}

// maxDelayYields bounds the commit delay's yields whatever the clock says
// (a clock that moves slowly): the time bound ends it long before on a
// real clock (a yield takes about 0.1 µs when nothing else runs, more when
// something does).
const maxDelayYields = 1 << 16

// commitDelay waits, yielding, while fewer callers wait for records the
// last fsync did not cover than waited when it ended, at most half of its
// time (see Wait).
func (l *Log) commitDelay() {
	l.groupMu.Lock()
	limit, want := l.lastSync/2, l.lastGroup
	l.groupMu.Unlock()
	if l.opts.NoCommitDelay || limit <= 0 || want < 2 {
		return
	}
	start := l.opts.Now()
	for range maxDelayYields {
		if l.uncovered() >= want || l.opts.Now().Sub(start) >= limit {
			return
		}
		runtime.Gosched()
	}
}

// uncovered counts the callers of syncTo waiting for a record no fsync
// has covered yet (the others are on their way out).
func (l *Log) uncovered() int {
	d := l.durable.Load()
	l.groupMu.Lock()
	defer l.groupMu.Unlock()
	n := 0
	for _, s := range l.waitSeqs {
		if s > d {
			n++
		}
	}
	return n
}
