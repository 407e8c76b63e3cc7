package engine

import (
	"fmt"
	"reflect"

	"github.com/ttldb/ttldb/internal/codec"
)

// Writes take a document as a Document or as a Go value (a struct, a
// pointer to one, or another map with string keys). The value is encoded
// once, straight to the stored form (no intermediate map), and takes the
// same path as a Document from there.

// prepareNewValue is prepareNewDocument for a document that is not a
// map[string]any.
func (c *Collection) prepareNewValue(doc any) (newDoc, error) {
	enc, genID, err := codec.EncodeValue(doc, func() any { return NewObjectIDFromTime(c.db.clock.Now()) })
	if err != nil {
		return newDoc{}, fmt.Errorf("collection %q: %w", c.name, err)
	}
	id := genID
	if id == nil {
		id, _ = codec.EncodedField(enc, "_id")
	}
	return newDoc{enc: enc, id: id}, nil
}

// documentList turns a slice (or array) of documents of any form into
// []any, without copying structs: an element that is a struct is passed
// by its address in the slice.
func documentList(docs any) ([]any, error) {
	rv := reflect.ValueOf(docs)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return nil, &DocumentError{Reason: fmt.Sprintf("InsertMany takes a slice of documents, not %T", docs)}
	}
	list := make([]any, rv.Len())
	for i := range list {
		e := rv.Index(i)
		if e.Kind() == reflect.Struct && e.CanAddr() {
			e = e.Addr()
		}
		list[i] = e.Interface()
	}
	return list, nil
}

// asDocument returns a document given in any form as a Document (in
// stored form, except a map[string]any, returned as it is). nil stays nil.
func asDocument(doc any) (Document, error) {
	switch d := doc.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return d, nil
	}
	enc, _, err := codec.EncodeValue(doc, nil)
	if err != nil {
		return nil, err
	}
	return codec.Decode(enc), nil
}
