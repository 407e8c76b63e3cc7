package engine

import "github.com/ttldb/ttldb/internal/codec"

// SingleResult is the outcome of FindOne: one document, or the error that
// kept it (ErrNotFound when nothing matched). Read it with Decode or
// Document; each returns the error if there is one. It is a small value
// made for one read, safe to copy; it holds the document, not a lock.
type SingleResult struct {
	enc []byte   // the document's stored encoding, never changed (or nil)
	doc Document // else the document, when the query built it (projection)
	err error
}

// Err returns the error FindOne met (nil if it found a document).
func (r SingleResult) Err() error { return r.err }

// Decode decodes the document into v, a non-nil pointer to a struct, a
// map with string keys or an interface (see Document for how a struct's
// fields are named). A map[string]any (or Document) v points to is
// cleared and refilled (the caller's map is reused); a struct is set to
// its zero value and filled from the document's fields; fields the
// destination does not name are ignored. Numbers convert between kinds
// when the value fits exactly (int64(5) into an int8; 5.5 into an int is
// an error); dates come back in UTC; null sets the zero value (nil for a
// pointer, slice or map).
//
// It returns FindOne's error if there is one, else a *DecodeError
// (wrapping ErrDecode, naming the field) for a value that does not fit
// its destination, and then v is unchanged. It allocates only what v
// needs: nothing for a struct's numbers, bools, dates and ObjectIDs, one
// allocation per string, and a new array, map or value for each slice,
// map or pointer (never reusing what v's old value pointed to, which the
// caller may still hold).
func (r SingleResult) Decode(v any) error {
	if r.err != nil {
		return r.err
	}
	enc := r.enc
	if enc == nil {
		var err error
		if enc, err = codec.Encode(r.doc, nil); err != nil {
			return err
		}
	}
	return codec.DecodeInto(enc, v)
}

// Document returns the document (a copy the caller owns), or FindOne's
// error. Calling it twice on one result may return the same map.
func (r SingleResult) Document() (Document, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.enc != nil {
		return codec.Decode(r.enc), nil
	}
	return r.doc, nil
}

// DecodeError reports a stored value that does not fit the destination
// given to Decode, with the dotted path to it (Path) and why (Reason). It
// wraps ErrDecode.
type DecodeError = codec.DecodeError
