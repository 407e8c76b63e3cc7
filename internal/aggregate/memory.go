package aggregate

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// memoryChunk is how much a stage books of the DB's budget at a time, so
// that the host is not asked for every document.
const memoryChunk = 64 << 10

// ctxEvery is how many documents a blocking loop reads between two
// checks of its context.
const ctxEvery = 64

// memory counts what one blocking stage holds: against the stage's limit
// (Options.MaxMemoryBytes) and, booked by chunks, against the DB's budget
// (Host.Grow).
type memory struct {
	host   Host
	limit  int64
	used   int64
	booked int64
}

// newMemory starts the count of a blocking stage of this run.
func (r *runner) newMemory() *memory {
	m := &memory{host: r.host, limit: r.p.opts.MaxMemoryBytes}
	r.mems = append(r.mems, m)
	return m
}

// grow adds n bytes (negative: the stage let go of some). It fails,
// wrapping errs.ErrMemoryLimit, past the stage's limit or the DB's
// budget.
func (m *memory) grow(n int64) error {
	m.used += n
	if m.used > m.limit {
		return fmt.Errorf("%w: the stage would hold about %d bytes, more than its limit of %d bytes", errs.ErrMemoryLimit, m.used, m.limit)
	}
	if m.host != nil && m.used > m.booked {
		more := max(m.used-m.booked, memoryChunk)
		if err := m.host.Grow(more); err != nil {
			m.used -= n
			return err
		}
		m.booked += more
	}
	return nil
}

// release gives the stage's booking back; the stage holds nothing more.
func (m *memory) release() {
	if m.host != nil && m.booked != 0 {
		_ = m.host.Grow(-m.booked) // giving back cannot fail
	}
	m.used, m.booked = 0, 0
}

// reset forgets what the stage held, keeping its booking for what it
// holds next.
func (m *memory) reset() { m.used = 0 }

// checkCtx returns ctx's error every ctxEvery calls (i counts them).
func checkCtx(ctx context.Context, i int) error {
	if i%ctxEvery == 0 {
		return ctx.Err()
	}
	return nil
}

// Size estimates, in bytes, of what a value holds in memory: the Go
// header of each value plus its payload, recursively. It is an estimate
// (map buckets and allocator rounding are not counted exactly), meant to
// bound a stage's memory, not to measure it.
const (
	valueOverhead = 16 // an interface value
	fieldOverhead = 32 // a map entry besides its key's bytes and value
)

// sizeOf estimates the memory v holds (see the constants above).
func sizeOf(v any) int64 {
	switch x := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return valueOverhead
	case string:
		return valueOverhead + int64(len(x))
	case time.Time:
		return valueOverhead + 24
	case codec.ObjectID, bson.Decimal128, bson.Timestamp:
		return valueOverhead + 16
	case []byte:
		return valueOverhead + 24 + int64(len(x))
	case bson.Binary:
		return valueOverhead + 24 + int64(len(x.Data))
	case bson.Regex:
		return valueOverhead + int64(len(x.Pattern)+len(x.Options))
	case map[string]any:
		return docSize(x)
	case []any:
		n := int64(valueOverhead + 24)
		for _, e := range x {
			n += sizeOf(e)
		}
		return n
	}
	if elems, ok := codec.ArrayElements(v); ok {
		n := int64(valueOverhead + 24)
		for _, e := range elems {
			n += sizeOf(e)
		}
		return n
	}
	return valueOverhead + int64(reflect.TypeOf(v).Size())
}

// docSize estimates the memory a document holds: its fields' names and
// values, recursively.
func docSize(d map[string]any) int64 {
	n := int64(valueOverhead + 48)
	for k, v := range d {
		n += fieldOverhead + int64(len(k)) + sizeOf(v)
	}
	return n
}
