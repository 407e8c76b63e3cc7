package engine

import (
	"fmt"
	"time"

	"github.com/ttldb/ttldb/ttltest"
)

// Ops reach an application through the DB's sinks (change streams, the
// durability log); this example records them with a test sink, ships
// them in their binary form and applies them to a replica.
func ExampleDB_Apply() {
	clk := ttltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	primary, _ := Open(WithClock(clk), WithMonitor(MonitorOptions{Disabled: true}))
	defer primary.Close()
	rec := &recordingSink{}
	primary.ops.attach(rec)

	sessions := primary.Collection("sessions")
	_, _ = sessions.InsertOne(Document{"_id": "s1", "user": "ada"}) // creates the collection: two ops
	_, _ = sessions.UpdateOne(Document{"_id": "s1"}, Document{"$currentDate": Document{"seen": true}})

	// Ship each op in its binary form.
	var wire [][]byte
	for _, op := range rec.take() {
		b, err := op.MarshalBinary()
		if err != nil {
			panic(err)
		}
		wire = append(wire, b)
	}

	replica, _ := Open(WithMonitor(MonitorOptions{Disabled: true}))
	defer replica.Close()
	for _, b := range wire {
		var op Op
		if err := op.UnmarshalBinary(b); err != nil {
			panic(err)
		}
		if err := replica.Apply(op); err != nil {
			panic(err)
		}
		fmt.Println(op.Seq, op.Kind, op.Collection)
	}
	doc, _ := replica.Collection("sessions").FindOne(Document{"_id": "s1"}).Document()
	fmt.Println(doc["user"], doc["seen"])
	// Output:
	// 1 createCollection sessions
	// 2 insert sessions
	// 3 update sessions
	// ada 2026-01-01 00:00:00 +0000 UTC
}
