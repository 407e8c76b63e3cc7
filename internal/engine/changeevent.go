package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
)

// OperationType is a change event's kind, named as MongoDB names them.
type OperationType string

// The operation types of change events. Create, CreateIndexes,
// DropIndexes and Modify are MongoDB's "expanded events": a stream shows
// them only with ChangeStreamOptions.ShowExpandedEvents or when
// OperationTypes names them.
const (
	// OperationInsert: a document was inserted (by an insert, or an
	// upsert that inserted). FullDocument is the document.
	OperationInsert OperationType = "insert"
	// OperationUpdate: a document was changed by update operators
	// (UpdateOne, UpdateMany, FindOneAndUpdate, an upsert that matched).
	OperationUpdate OperationType = "update"
	// OperationReplace: a document was replaced (ReplaceOne,
	// FindOneAndReplace). FullDocument is the new document.
	OperationReplace OperationType = "replace"
	// OperationDelete: a document was deleted: by a caller, by a capped
	// collection's eviction, or, with Expired set, because it expired
	// (by the TTL monitor, or by a write under HideExpired).
	OperationDelete OperationType = "delete"
	// OperationDrop: a collection was dropped. A collection stream goes
	// on after it (unlike MongoDB's, which is invalidated): the next write
	// creates the collection again.
	OperationDrop OperationType = "drop"
	// OperationCreate: a collection was created (CreateCollection, or a
	// first write). Expanded event.
	OperationCreate OperationType = "create"
	// OperationCreateIndexes: an index was created; Index names it.
	// Expanded event.
	OperationCreateIndexes OperationType = "createIndexes"
	// OperationDropIndexes: an index was dropped; Index names it.
	// Expanded event.
	OperationDropIndexes OperationType = "dropIndexes"
	// OperationModify: CollMod changed an index (Index names it) or a
	// time-series collection's options. Expanded event.
	OperationModify OperationType = "modify"
)

// operationTypes lists every OperationType; its position is the type's
// bit in a stream's filter mask.
var operationTypes = [...]OperationType{OperationInsert, OperationUpdate, OperationReplace, OperationDelete, OperationDrop, OperationCreate, OperationCreateIndexes, OperationDropIndexes, OperationModify}

// expandedTypes are the types a stream shows only when asked.
const expandedTypes = 1<<5 | 1<<6 | 1<<7 | 1<<8

// typeBit returns t's bit in a filter mask, or 0 for an unknown type.
func typeBit(t OperationType) uint16 {
	for i, x := range operationTypes {
		if x == t {
			return 1 << i
		}
	}
	return 0
}

// kindType maps an op's kind to its events' type.
func kindType(k OpKind) OperationType {
	switch k {
	case OpInsert:
		return OperationInsert
	case OpUpdate:
		return OperationUpdate
	case OpReplace:
		return OperationReplace
	case OpDelete, OpExpire:
		return OperationDelete
	case OpCreateCollection:
		return OperationCreate
	case OpDropCollection:
		return OperationDrop
	case OpCreateIndex:
		return OperationCreateIndexes
	case OpDropIndex:
		return OperationDropIndexes
	case OpCollMod:
		return OperationModify
	}
	return ""
}

// eventCount returns how many change events op makes: one per document
// for data changes, one for the others.
func eventCount(op *Op) int {
	switch op.Kind {
	case OpInsert, OpUpdate, OpReplace:
		return len(op.Docs)
	case OpDelete, OpExpire:
		if op.packed != nil {
			return op.packed.len()
		}
		return len(op.Keys)
	}
	return 1
}

// ResumeToken is a place in a DB's history of changes: every op before
// Seq has been seen, and the first Index events of op Seq. A change
// event's ID is the token just after it (for the last event of op n,
// {n+1, 0}), so tokens increase with the events, and a stream resumed
// after one (ChangeStreamOptions.ResumeAfter) goes on with the next
// event. The zero token is the start of the DB's history.
//
// Its text form (String, MarshalText, and the id of a server-sent event)
// is "Seq:Index" in decimal, e.g. "43:0"; ParseResumeToken reads it.
type ResumeToken struct {
	Seq   uint64
	Index uint32
}

// String returns "Seq:Index".
func (t ResumeToken) String() string {
	return strconv.FormatUint(t.Seq, 10) + ":" + strconv.FormatUint(uint64(t.Index), 10)
}

// MarshalText returns the token's String form.
func (t ResumeToken) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads the String form (see ParseResumeToken).
func (t *ResumeToken) UnmarshalText(b []byte) error {
	x, err := ParseResumeToken(string(b))
	if err != nil {
		return err
	}
	*t = x
	return nil
}

// ParseResumeToken implements ttldb.ParseResumeToken, whose documentation is the contract.
func ParseResumeToken(s string) (ResumeToken, error) {
	a, b, ok := strings.Cut(s, ":")
	seq, err1 := strconv.ParseUint(a, 10, 64)
	idx, err2 := strconv.ParseUint(b, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return ResumeToken{}, fmt.Errorf("%w: resume token %q is not of the form seq:index", ErrInvalidOptions, s)
	}
	return ResumeToken{Seq: seq, Index: uint32(idx)}, nil
}

// less orders tokens by place in the history.
func (t ResumeToken) less(u ResumeToken) bool {
	return t.Seq < u.Seq || t.Seq == u.Seq && t.Index < u.Index
}

// Namespace names what a change event changed: ttldb has one database per
// DB, so only the collection (MongoDB's ns.coll).
type Namespace struct {
	Coll string
}

// UpdateDescription says what an update event changed, as MongoDB's does:
// the fields the update operators set, with their new values, and the
// fields they removed. Paths are dotted, as in the update.
type UpdateDescription struct {
	// UpdatedFields maps each path an operator wrote ($set, $inc,
	// $currentDate, $push, the target of a $rename...) to its value in
	// the updated document; an array changed by an array operator comes
	// whole.
	UpdatedFields Document
	// RemovedFields are the paths $unset (and the source of a $rename)
	// removed, sorted.
	RemovedFields []string
	// TruncatedArrays lists the arrays an update shortened in place
	// (MongoDB's truncatedArrays, which it sends since 4.7, empty but for
	// pipeline-style updates). ttldb's updates are operator updates: an
	// array an operator changed ($pop, $pull, $push...) comes whole in
	// UpdatedFields, so this is always empty, never nil.
	TruncatedArrays []TruncatedArray
	// DisambiguatedPaths maps each ambiguous path of UpdatedFields and
	// RemovedFields to its components, as MongoDB 6.1+ reports it: a
	// path is ambiguous when a component after the first is a number,
	// which may name an array element or a field ("a.0" in {a: {"0":
	// 1}}). Components are strings, except array indices, which are
	// int32. Set only with ChangeStreamOptions.ShowExpandedEvents and an
	// ambiguous path (nil otherwise), as MongoDB does.
	DisambiguatedPaths Document
}

// TruncatedArray is an array an update shortened: Field kept its first
// NewSize elements.
type TruncatedArray struct {
	Field   string
	NewSize int32
}

// ChangeEvent is one change, as MongoDB's change streams describe it,
// with ttldb's extensions for TTL deletions. Its RawDocument fields share
// the committed op's bytes, which never change: an event may be kept for
// as long as needed, and a field is decoded only when read (RawDocument's
// Document, Lookup, ID).
type ChangeEvent struct {
	// ID is the event's resume token (MongoDB's _id): the place just
	// after this event.
	ID ResumeToken
	// OperationType is what happened.
	OperationType OperationType
	// ClusterTime is the Seq of the op the event comes from: every event
	// of one write (the documents of an InsertMany, the deletions of one
	// TTL batch) shares it, as a MongoDB transaction's events share their
	// clusterTime. It increases with commit order across the DB.
	ClusterTime uint64
	// WallTime is the DB clock's reading the write was resolved with (for
	// a TTL deletion, the batch's instant), in UTC.
	WallTime time.Time
	// Ns is the collection changed.
	Ns Namespace
	// DocumentKey is {_id: value} of the document changed; nil for the
	// events of collections and indexes.
	DocumentKey RawDocument
	// FullDocument is the document as the change left it: always for
	// insert and replace; for update with ChangeStreamOptions.FullDocument
	// set (UpdateLookup, WhenAvailable or Required: the document as this
	// very update left it, not as a later lookup finds it); nil for a
	// delete.
	FullDocument RawDocument
	// FullDocumentBeforeChange is the document as it was before an
	// update, replace or delete, with
	// ChangeStreamOptions.FullDocumentBeforeChange set and when the op
	// kept it (see ChangeStreamOptions.FullDocumentBeforeChange).
	FullDocumentBeforeChange RawDocument
	// UpdateDescription describes an update's changes, when its update
	// document is known; nil for other events.
	UpdateDescription *UpdateDescription
	// OperationDescription is, for create, createIndexes and modify, the
	// specification applied, as a document.
	OperationDescription RawDocument

	// Expired (ttldb extension) marks a delete of an expired document:
	// by the TTL monitor (MongoDB reports those as plain deletes), or by a
	// write under HideExpired that removed it from its way.
	Expired bool
	// Index (ttldb extension) names the TTL index an expired document
	// expired under, or the index of a createIndexes, dropIndexes or
	// modify event.
	Index string
	// Cutoff (ttldb extension) is the instant an expired deletion
	// deleted against: the document's threshold under Index was at or
	// before it.
	Cutoff time.Time

	// Txn is, for the events of a transaction's commit, the transaction:
	// its session's lsid and its txnNumber, as MongoDB's events carry
	// them (the document form has lsid: {id: UUID} and txnNumber). A
	// transaction's events are delivered together, in its order, after
	// its commit. Zero for a write outside any transaction.
	Txn TxnID
}

// eventOf fills ev with event i of op, as the stream's options ask. It
// fails only with ErrNoPreImage, for a stream that requires pre-images.
func (cs *ChangeStream) eventOf(ev *ChangeEvent, op *Op, i int) error {
	*ev = ChangeEvent{
		ID:            afterEvent(op, i),
		OperationType: kindType(op.Kind),
		ClusterTime:   op.Seq,
		WallTime:      op.Time,
		Ns:            Namespace{Coll: op.Collection},
		Txn:           op.Txn,
	}
	switch op.Kind {
	case OpInsert, OpUpdate, OpReplace:
		doc := op.Docs[i]
		ev.DocumentKey = cs.documentKey(doc)
		if op.Kind != OpUpdate || cs.fullDoc {
			ev.FullDocument = doc
		}
		if op.Kind == OpUpdate && i < len(op.Updates) && op.Updates[i] != nil {
			ev.UpdateDescription = describeUpdate(op.Updates[i], doc, cs.expanded)
		}
		if op.Kind == OpInsert {
			return nil
		}
	case OpDelete, OpExpire:
		if op.packed != nil {
			ev.DocumentKey = op.packed.key(i)
		} else {
			ev.DocumentKey = op.Keys[i]
		}
		if op.Kind == OpExpire || op.Expired {
			ev.Expired, ev.Index, ev.Cutoff = true, op.Index, op.Cutoff
		}
	default:
		ev.Index = op.Index
		if op.Kind != OpDropCollection && op.Kind != OpDropIndex {
			ev.OperationDescription = op.Spec
		}
		return nil
	}
	if cs.before == FullDocumentOff {
		return nil
	}
	if i < len(op.Before) && op.Before[i] != nil {
		ev.FullDocumentBeforeChange = op.Before[i]
		return nil
	}
	if cs.before == FullDocumentRequired {
		return fmt.Errorf("%w: %s event %s on collection %q", ErrNoPreImage, ev.OperationType, ev.ID, op.Collection)
	}
	return nil
}

// afterEvent returns the token just after event i of op.
func afterEvent(op *Op, i int) ResumeToken {
	if i+1 >= eventCount(op) {
		return ResumeToken{Seq: op.Seq + 1}
	}
	return ResumeToken{Seq: op.Seq, Index: uint32(i + 1)}
}

// keyArenaSize is the size of the buffers a stream cuts its events'
// document keys from: one allocation per some hundred events instead of
// one per event. A kept event keeps its buffer (at most this much) alive.
const keyArenaSize = 2048

// documentKey returns {_id: v} for the encoded document doc, the _id's
// bytes copied as they are, cut from the stream's key buffer: the bytes of
// a key are never written again, as events may be kept.
func (cs *ChangeStream) documentKey(doc RawDocument) RawDocument {
	raw, ok := codec.EncodedFieldRaw(doc, "_id")
	if !ok {
		return nil
	}
	// The field count, the name's length and "_id", then the value.
	need := 5 + len(raw)
	if cap(cs.keys)-len(cs.keys) < need {
		cs.keys = make([]byte, 0, max(keyArenaSize, need))
	}
	start := len(cs.keys)
	cs.keys = codec.AppendRawField(append(cs.keys, 1), "_id", raw)
	return RawDocument(cs.keys[start:len(cs.keys):len(cs.keys)])
}

// describeUpdate builds the UpdateDescription of an update document (as
// applied) and the document it produced, with DisambiguatedPaths when
// disambiguate is set. A replacement-style or unknown form yields nil.
func describeUpdate(update, after RawDocument, disambiguate bool) *UpdateDescription {
	u := update.Document()
	var post Document
	d := &UpdateDescription{UpdatedFields: Document{}, TruncatedArrays: []TruncatedArray{}}
	for op, arg := range u {
		fields, ok := arg.(map[string]any)
		if !ok || !strings.HasPrefix(op, "$") {
			return nil
		}
		for path, v := range fields {
			switch op {
			case "$unset":
				d.RemovedFields = append(d.RemovedFields, path)
				continue
			case "$rename":
				d.RemovedFields = append(d.RemovedFields, path)
				to, ok := v.(string)
				if !ok {
					continue
				}
				path = to
			}
			if i := strings.Index(path, ".$["); i >= 0 {
				// An array update ("a.$[e].b"): the array, whole.
				path = path[:i]
			}
			if post == nil {
				post = after.Document()
			}
			if val, ok := valueAtPath(post, path); ok {
				d.UpdatedFields[path] = val
			}
		}
	}
	slices.Sort(d.RemovedFields)
	if disambiguate {
		if post == nil {
			post = after.Document()
		}
		for path := range d.UpdatedFields {
			d.disambiguate(post, path)
		}
		for _, path := range d.RemovedFields {
			d.disambiguate(post, path)
		}
	}
	return d
}

// disambiguate adds path to DisambiguatedPaths if a component after the
// first is a number, with each component as the document after the
// update resolves it: an array index as an int32, a field name as a
// string. A removed path is resolved as far as it still exists: its last
// component by the kind of its parent.
func (d *UpdateDescription) disambiguate(post Document, path string) {
	parts := strings.Split(path, ".")
	ambiguous := false
	for _, p := range parts[1:] {
		if isNumeric(p) {
			ambiguous = true
		}
	}
	if !ambiguous {
		return
	}
	comps := make([]any, len(parts))
	var cur any = post
	for i, p := range parts {
		comps[i] = p
		if m, ok := codec.AsDocument(cur); ok {
			cur = m[p]
			continue
		}
		if elems, ok := codec.ArrayElements(cur); ok && isNumeric(p) {
			n, _ := strconv.Atoi(p)
			comps[i] = int32(n)
			if n < len(elems) {
				cur = elems[n]
				continue
			}
		}
		cur = nil
	}
	if d.DisambiguatedPaths == nil {
		d.DisambiguatedPaths = Document{}
	}
	d.DisambiguatedPaths[path] = comps
}

// isNumeric reports whether a path component is all digits.
func isNumeric(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// valueAtPath returns the value at a dotted path of doc, descending into
// documents and, by a numeric component, into array elements.
func valueAtPath(doc Document, path string) (any, bool) {
	var cur any = doc
	for part := range strings.SplitSeq(path, ".") {
		if m, ok := codec.AsDocument(cur); ok {
			v, ok := m[part]
			if !ok {
				return nil, false
			}
			cur = v
			continue
		}
		elems, ok := codec.ArrayElements(cur)
		if !ok {
			return nil, false
		}
		i, err := strconv.Atoi(part)
		if err != nil || i < 0 || i >= len(elems) {
			return nil, false
		}
		cur = elems[i]
	}
	return cur, true
}
