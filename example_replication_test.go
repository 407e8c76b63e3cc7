package ttldb_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ttldb/ttldb"
	"github.com/ttldb/ttldb/ttltest"
)

// opLog is a Replicator that keeps the ops a DB commits, as a replication
// layer would before shipping them.
type opLog struct{ ops []ttldb.Op }

func (l *opLog) Begin() error           { return nil }
func (l *opLog) Commit(ops []ttldb.Op)  { l.ops = append(l.ops, ops...) }
func (l *opLog) End(err error) error    { return err }
func (l *opLog) take() (ops []ttldb.Op) { ops, l.ops = l.ops, nil; return ops }

// Ops reach a replication layer through a Replicator (or a change
// stream); this example ships them in their binary form and applies them
// to a replica.
func ExampleDB_Apply() {
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	log := &opLog{}
	primary, _ := ttldb.Open(ttldb.WithClock(clk), ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}), ttldb.WithReplicator(log))
	defer primary.Close()

	sessions := primary.Collection("sessions")
	_, _ = sessions.InsertOne(context.Background(), ttldb.Document{"_id": "s1", "user": "ada"}) // creates the collection: two ops
	_, _ = sessions.UpdateOne(context.Background(), ttldb.Document{"_id": "s1"}, ttldb.Document{"$currentDate": ttldb.Document{"seen": true}})

	// Ship each op in its binary form.
	var wire [][]byte
	for _, op := range log.take() {
		b, err := op.MarshalBinary()
		if err != nil {
			panic(err)
		}
		wire = append(wire, b)
	}

	replica, _ := ttldb.Open(ttldb.WithMonitor(ttldb.MonitorOptions{Disabled: true}))
	defer replica.Close()
	for _, b := range wire {
		var op ttldb.Op
		if err := op.UnmarshalBinary(b); err != nil {
			panic(err)
		}
		if err := replica.Apply(context.Background(), op); err != nil {
			panic(err)
		}
		fmt.Println(op.Seq, op.Kind, op.Collection)
	}
	doc, _ := replica.Collection("sessions").FindOne(context.Background(), ttldb.Document{"_id": "s1"}).Document()
	fmt.Println(doc["user"], doc["seen"])
	// Output:
	// 1 createCollection sessions
	// 2 insert sessions
	// 3 update sessions
	// ada 2026-01-01 00:00:00 +0000 UTC
}
