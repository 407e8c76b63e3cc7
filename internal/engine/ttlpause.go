package engine

import (
	"context"
	"fmt"

	"github.com/ttldb/ttldb/internal/codec"
)

// A DB-wide pause of TTL deletion: DB.SetTTLPaused. It is an op
// (OpDBMod), logged and replicated as CollMod's TTLPaused is for one
// collection, so that it survives a restart and a failover; the snapshot
// keeps it in its header's state document. The in-memory switch
// SetTTLMonitorEnabled is not an op: it is the process's, and a restarted
// or failed-over DB runs its monitor as its options say.

// SetTTLPaused implements ttldb.DB.SetTTLPaused, whose documentation is the contract.
func (db *DB) SetTTLPaused(ctx context.Context, paused bool) (err error) {
	if err := db.writable(); err != nil {
		return err
	}
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := db.refuseTxn(ctx, "SetTTLPaused"); err != nil {
		return err
	}
	defer db.durable(&err)
	_, err = replicated(db, func() (struct{}, error) {
		if err := db.checkOpen(); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, db.setTTLPaused(paused, nil)
	})
	return err
}

// TTLPaused implements ttldb.DB.TTLPaused, whose documentation is the contract.
func (db *DB) TTLPaused() bool { return db.ttlPaused.Load() }

// setTTLPaused sets the DB-wide pause and commits its op: applied, the
// OpDBMod DB.Apply applies, keeping its number; nil for a local call,
// whose op is numbered here. The flag is set before the op is committed,
// under pauseMu, so that the order of the flag's values is that of the
// ops (a snapshot reads the flag after the op it starts at, and replays
// every later one).
func (db *DB) setTTLPaused(paused bool, applied *Op) error {
	db.pauseMu.Lock()
	defer db.pauseMu.Unlock()
	was := db.ttlPaused.Swap(paused)
	if applied != nil {
		if err := db.ops.commitApplied([]Op{*applied}); err != nil {
			db.ttlPaused.Store(was)
			return err
		}
	} else if db.ops.opsWanted() {
		db.ops.commit([]Op{{Kind: OpDBMod, Time: opTime(db.clock.Now()), Spec: pauseSpec(paused)}})
	}
	if !paused {
		db.monitor.poke()
	}
	return nil
}

// applyDBMod applies an OpDBMod (DB.Apply).
func (db *DB) applyDBMod(op *Op) error {
	if op.Collection != "" {
		return fmt.Errorf("%w: a dbMod names no collection, not %q", ErrInvalidOp, op.Collection)
	}
	paused, err := pausedOf(op.Spec)
	if err != nil {
		return err
	}
	return db.setTTLPaused(paused, op)
}

// dbState is the state document of a snapshot's header: what the DB's
// history set that belongs to no collection (nil: nothing).
func dbState(ttlPaused bool) []byte {
	if !ttlPaused {
		return nil
	}
	enc, _ := codec.EncodeExpr(Document{"ttlPaused": true})
	return enc
}

// parseDBState reads a snapshot header's state document.
func parseDBState(b []byte) (ttlPaused bool, err error) {
	if len(b) == 0 {
		return false, nil
	}
	return pausedOf(b)
}
