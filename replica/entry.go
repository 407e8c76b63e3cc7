package replica

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ttldb/ttldb"
)

// A raft log entry of this package (a raft.LogCommand's Data):
//
//	version  byte     entryVersion, or entryProposal
//	epoch    uint64   little-endian: the proposing node's epoch (see Node)
//	proposal uint64   little-endian, entryProposal only: the proposal's
//	                  number in its epoch (Node.ProposeExpire)
//	count    uvarint  number of ops
//	count × (uvarint length, ttldb.Op binary form)
//
// The ops of an entryVersion entry are those of one write as the leader
// committed them, with their sequence numbers. An entryProposal entry
// holds one TTL batch (an OpExpire) the leader proposed before applying it,
// with the sequence number it reserved.
const (
	entryVersion  = 1
	entryProposal = 2
)

// entryHeader is what an entry says besides its ops.
type entryHeader struct {
	epoch    uint64
	proposal uint64 // 0: the entry of a write
}

// errEntry marks a log entry this package cannot read.
var errEntry = errors.New("replica: malformed log entry")

// encodeEntry builds the entry of ops proposed in epoch.
func encodeEntry(epoch uint64, ops []ttldb.Op) ([]byte, error) {
	b := make([]byte, 0, 16+64*len(ops))
	b = append(b, entryVersion)
	b = binary.LittleEndian.AppendUint64(b, epoch)
	return appendOps(b, ops)
}

// encodeProposal builds the entry of a TTL batch proposed first: op, the
// proposal-th of epoch.
func encodeProposal(epoch, proposal uint64, op ttldb.Op) ([]byte, error) {
	size := 64 + len(op.Index) + len(op.Collection)
	for _, k := range op.Keys {
		size += len(k) + 2
	}
	for _, d := range op.Before {
		size += len(d) + 3
	}
	b := make([]byte, 0, size)
	b = append(b, entryProposal)
	b = binary.LittleEndian.AppendUint64(b, epoch)
	b = binary.LittleEndian.AppendUint64(b, proposal)
	return appendOps(b, []ttldb.Op{op})
}

// appendOps appends the count and the binary forms of ops.
func appendOps(b []byte, ops []ttldb.Op) ([]byte, error) {
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

// entryHead reads an entry's header, and returns the rest.
func entryHead(data []byte) (h entryHeader, rest []byte, err error) {
	if len(data) < 9 || (data[0] != entryVersion && data[0] != entryProposal) {
		return h, nil, fmt.Errorf("%w: version or header", errEntry)
	}
	h.epoch = binary.LittleEndian.Uint64(data[1:9])
	rest = data[9:]
	if data[0] == entryProposal {
		if len(rest) < 8 {
			return h, nil, fmt.Errorf("%w: proposal header", errEntry)
		}
		if h.proposal = binary.LittleEndian.Uint64(rest); h.proposal == 0 {
			return h, nil, fmt.Errorf("%w: proposal 0", errEntry)
		}
		rest = rest[8:]
	}
	return h, rest, nil
}

// decodeEntry reads an entry.
func decodeEntry(data []byte) (h entryHeader, ops []ttldb.Op, err error) {
	h, rest, err := entryHead(data)
	if err != nil {
		return h, nil, err
	}
	count, n := binary.Uvarint(rest)
	if n <= 0 || count == 0 || count > uint64(len(rest)) || (h.proposal != 0 && count != 1) {
		return h, nil, fmt.Errorf("%w: op count", errEntry)
	}
	rest = rest[n:]
	ops = make([]ttldb.Op, count)
	for i := range ops {
		l, n := binary.Uvarint(rest)
		if n <= 0 || l > uint64(len(rest)-n) {
			return h, nil, fmt.Errorf("%w: op %d length", errEntry, i)
		}
		if err := ops[i].UnmarshalBinary(rest[n : n+int(l)]); err != nil {
			return h, nil, fmt.Errorf("%w: op %d: %w", errEntry, i, err)
		}
		rest = rest[n+int(l):]
	}
	if len(rest) != 0 {
		return h, nil, fmt.Errorf("%w: %d trailing bytes", errEntry, len(rest))
	}
	for i := 1; i < len(ops); i++ {
		if ops[i].Seq != ops[i-1].Seq+1 {
			return h, nil, fmt.Errorf("%w: op sequence numbers %d then %d", errEntry, ops[i-1].Seq, ops[i].Seq)
		}
	}
	if h.proposal != 0 && ops[0].Kind != ttldb.OpExpire {
		return h, nil, fmt.Errorf("%w: a proposal of a %s op", errEntry, ops[0].Kind)
	}
	return h, ops, nil
}
