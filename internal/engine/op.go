package engine

import (
	"fmt"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
)

// OpVersion is the version of the Op value and of its binary form
// (Op.MarshalBinary). It grows when a field is added or a meaning changes;
// UnmarshalBinary reads versions MinOpVersion to OpVersion and refuses any
// other with ErrOpVersion. Version 2 has version 1's layout; its documents
// may hold the encodings of the driver's bson types and '$'-prefixed and
// dotted field names (docs/FORMAT.md), which a reader of version 1 would
// take for malformed. Version 3 has version 2's layout; an OpCollMod may
// have no Index and the Spec {ttlPaused: bool} (CollMod's TTLPaused),
// which a reader of version 2 would refuse as malformed. Version 4 has
// version 3's layout and adds the kind OpDBMod, which a reader of version
// 3 would refuse as unknown. Version 5 adds the transaction of an op
// (Op.Txn: flags bit 1 and two fields at the end), which a reader of
// version 4 would refuse as malformed.
const OpVersion = 5

// MinOpVersion is the oldest binary form of an Op this version reads.
const MinOpVersion = 1

// OpKind says what an Op changes.
type OpKind uint8

// The kinds of Op. The numbers are part of the binary form: never reuse one.
const (
	// OpInsert stores Docs (each with its _id resolved: generated ids are
	// in the document).
	OpInsert OpKind = 1
	// OpUpdate replaces each document whose _id is that of one of Docs by
	// that document: Docs are the results of an update ($currentDate and
	// every other operator resolved). Updates holds, parallel to Docs,
	// the update documents as applied, for change events; Apply ignores
	// them.
	OpUpdate OpKind = 2
	// OpReplace is OpUpdate for a replacement (ReplaceOne,
	// FindOneAndReplace): Docs are the documents as stored.
	OpReplace OpKind = 3
	// OpDelete deletes the documents whose _id values Keys hold: deletes
	// by a caller, capped evictions, and expired documents a write under
	// HideExpired removed from its way (these carry Index and Cutoff as an
	// OpExpire does, and set Expired).
	OpDelete OpKind = 4
	// OpExpire is a TTL batch: the documents of Keys, chosen by the
	// monitor because index Index held a date before Cutoff for each. Apply
	// deletes each of them that is still expired at Cutoff under that
	// index (the same re-check the monitor makes), and nothing else.
	OpExpire OpKind = 5
	// OpCreateCollection creates Collection with the options in Spec.
	OpCreateCollection OpKind = 6
	// OpDropCollection drops Collection.
	OpDropCollection OpKind = 7
	// OpCreateIndex creates the index described by Spec (its IndexModel,
	// name resolved) on Collection.
	OpCreateIndex OpKind = 8
	// OpDropIndex drops index Index of Collection.
	OpDropIndex OpKind = 9
	// OpCollMod changes index Index (CollModIndex, in Spec) or, with Index
	// empty, the time-series options of Collection (TimeSeriesCollMod, in
	// Spec).
	OpCollMod OpKind = 10
	// OpDBMod changes the DB as a whole, Collection empty: the Spec
	// {ttlPaused: bool} pauses or resumes the TTL deletion of every
	// collection (DB.SetTTLPaused). It makes no change event.
	OpDBMod OpKind = 11
)

// maxOpKind is the greatest kind this version knows.
const maxOpKind = OpDBMod

// Op is one change a DB committed, described with every value its origin
// resolved: generated _id values, $currentDate times, the documents an
// update produced, the documents and the cutoff of a TTL batch. Applying
// the same ops in order (DB.Apply) to an empty DB yields the same state,
// and applying one never reads a clock, generates an id or chooses what to
// delete: persistence writes ops to disk, replication ships them, change
// streams (Watch) describe them.
//
// One write call commits one or more ops under one sequence range: an
// insert into a capped collection is an OpInsert followed by the OpDelete
// of what it evicted.
//
// An Op and the RawDocuments it holds are immutable once committed: do not
// change their bytes.
type Op struct {
	// Seq is the op's place in the DB's history: 1 for the first op a DB
	// commits, then +1 per op, in commit order across every collection.
	Seq uint64
	// Kind says what the op changes.
	Kind OpKind
	// Collection is the collection changed.
	Collection string
	// Time is the DB clock's reading the op was resolved with (the batch's
	// instant for an OpExpire), in UTC. Apply does not use it; change
	// events report it as wallTime.
	Time time.Time

	// Docs are the documents stored: OpInsert, OpUpdate, OpReplace.
	Docs []RawDocument
	// Versions, when set, are the record versions Docs were stored with
	// (parallel to Docs): the version half of an expire hook's delivery
	// identity (ExpiredBatch.Versions), which a DB reloaded from its data
	// directory gives the documents again, and DB.Apply stores them with
	// (a replica's hooks then see the origin's identity). Each is > 0.
	Versions []uint64
	// Updates, for OpUpdate and when set, are the update documents that
	// produced Docs (parallel to Docs), with every operator resolved; nil
	// where none is kept. Apply ignores them.
	Updates []RawDocument
	// Keys are the document keys ({_id: v}) of the documents deleted:
	// OpDelete, OpExpire.
	Keys []RawDocument
	// Before, when set, are the documents as they were before the change
	// (parallel to Docs for OpUpdate and OpReplace, to Keys for OpDelete and
	// OpExpire): kept only while a change stream asks for pre-images.
	// Apply ignores them.
	Before []RawDocument

	// Index names the index of OpExpire, OpCreateIndex, OpDropIndex and
	// OpCollMod, and of an OpDelete with Expired set.
	Index string
	// Cutoff is the instant an OpExpire (or an OpDelete with Expired set)
	// deleted against: each of its documents had a TTL threshold at or
	// before it.
	Cutoff time.Time
	// Expired marks an OpDelete of expired documents a write under
	// HideExpired removed from its way.
	Expired bool
	// Spec is the definition of OpCreateCollection, OpCreateIndex and
	// OpCollMod, as a document.
	Spec RawDocument
	// Txn, when not zero, is the transaction that committed the op: the
	// ops of one transaction are consecutive, share it, and are applied
	// by DB.Apply as one change. Each changes one document.
	Txn TxnID

	// packed, when set, holds the op's keys and Keys is nil: a TTL batch
	// committed while only change streams take ops, whose keys stay in
	// one buffer (packedKeys). The committer fills Keys before any other
	// sink or a Replicator sees the op: an Op outside the DB never has it.
	packed *packedKeys
}

// packedKeys are the keys of a deletion op in one buffer: key i is
// buf[ends[i-1]:ends[i]] (from 0 for the first). 4 bytes a key instead of
// a RawDocument's 24.
type packedKeys struct {
	buf  []byte
	ends []uint32
}

// len returns the number of keys.
func (p *packedKeys) len() int { return len(p.ends) }

// key returns key i, sharing the buffer (its capacity ends with it).
func (p *packedKeys) key(i int) RawDocument {
	start := uint32(0)
	if i > 0 {
		start = p.ends[i-1]
	}
	return RawDocument(p.buf[start:p.ends[i]:p.ends[i]])
}

// unpack returns the keys as Keys holds them, sharing the buffer.
func (p *packedKeys) unpack() []RawDocument {
	out := make([]RawDocument, len(p.ends))
	for i := range out {
		out[i] = p.key(i)
	}
	return out
}

// RawDocument is a document in ttldb's binary encoding, as stored: read a
// field with Lookup, or decode it whole with Document. The encoding is
// described in docs/FORMAT.md.
type RawDocument []byte

// Document decodes a new copy of the document.
func (r RawDocument) Document() Document { return codec.Decode(r) }

// Lookup returns the value of the top-level field name, decoding nothing
// else.
func (r RawDocument) Lookup(name string) (any, bool) { return codec.EncodedField(r, name) }

// Decode decodes the document into v, as SingleResult.Decode does: a
// pointer to a struct (bson or ttldb tags), a map or a Document. A value
// that does not fit its field is ErrDecode (a *DecodeError naming the
// field), and v is then unchanged; a nil RawDocument is ErrNotFound. It
// allocates what v needs, never the RawDocument's bytes, which v may
// outlive. A change event's documents (FullDocument,
// FullDocumentBeforeChange, DocumentKey) decode this way into the
// application's own types.
func (r RawDocument) Decode(v any) error {
	if r == nil {
		return fmt.Errorf("%w: Decode: no document", ErrNotFound)
	}
	if p, ok := v.(*Document); ok && p != nil {
		*p = r.Document()
		return nil
	}
	return codec.DecodeInto(r, v)
}

// ID returns the document's _id.
func (r RawDocument) ID() any {
	v, _ := codec.EncodedField(r, "_id")
	return v
}
