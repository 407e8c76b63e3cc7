package replica

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ttldb/ttldb"
)

// A raft log entry of this package (a raft.LogCommand's Data):
//
//	version  byte     entryVersion
//	epoch    uint64   little-endian: the proposing node's epoch (see Node)
//	count    uvarint  number of ops
//	count × (uvarint length, ttldb.Op binary form)
//
// The ops are those of one write (or one TTL batch) as the leader
// committed them, with their sequence numbers.
const entryVersion = 1

// errEntry marks a log entry this package cannot read.
var errEntry = errors.New("replica: malformed log entry")

// encodeEntry builds the entry of ops proposed in epoch.
func encodeEntry(epoch uint64, ops []ttldb.Op) ([]byte, error) {
	b := make([]byte, 0, 16+64*len(ops))
	b = append(b, entryVersion)
	b = binary.LittleEndian.AppendUint64(b, epoch)
	b = binary.AppendUvarint(b, uint64(len(ops)))
	for i := range ops {
		at := len(b)
		b = append(b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) // room for the length
		var err error
		b, err = ops[i].AppendBinary(b)
		if err != nil {
			return nil, err
		}
		// Move the op's bytes right after its (varint) length.
		n := len(b) - at - 10
		var lb [binary.MaxVarintLen64]byte
		ll := binary.PutUvarint(lb[:], uint64(n))
		copy(b[at+ll:], b[at+10:])
		copy(b[at:], lb[:ll])
		b = b[:at+ll+n]
	}
	return b, nil
}

// decodeEntry reads an entry.
func decodeEntry(data []byte) (epoch uint64, ops []ttldb.Op, err error) {
	if len(data) < 9 || data[0] != entryVersion {
		return 0, nil, fmt.Errorf("%w: version or header", errEntry)
	}
	epoch = binary.LittleEndian.Uint64(data[1:9])
	rest := data[9:]
	count, n := binary.Uvarint(rest)
	if n <= 0 || count == 0 || count > uint64(len(rest)) {
		return 0, nil, fmt.Errorf("%w: op count", errEntry)
	}
	rest = rest[n:]
	ops = make([]ttldb.Op, count)
	for i := range ops {
		l, n := binary.Uvarint(rest)
		if n <= 0 || l > uint64(len(rest)-n) {
			return 0, nil, fmt.Errorf("%w: op %d length", errEntry, i)
		}
		if err := ops[i].UnmarshalBinary(rest[n : n+int(l)]); err != nil {
			return 0, nil, fmt.Errorf("%w: op %d: %w", errEntry, i, err)
		}
		rest = rest[n+int(l):]
	}
	if len(rest) != 0 {
		return 0, nil, fmt.Errorf("%w: %d trailing bytes", errEntry, len(rest))
	}
	for i := 1; i < len(ops); i++ {
		if ops[i].Seq != ops[i-1].Seq+1 {
			return 0, nil, fmt.Errorf("%w: op sequence numbers %d then %d", errEntry, ops[i-1].Seq, ops[i].Seq)
		}
	}
	return epoch, ops, nil
}
