package engine

import "github.com/ttldb/ttldb/internal/codec"

// SingleResult is the outcome of FindOne: one document, or the error that
// kept it (ErrNotFound when nothing matched). Read it with Decode or
// Document; each returns the error if there is one. It is a small value
// made for one read, safe to copy; it holds the document, not a lock.
type SingleResult struct {
	enc  []byte   // the document's stored encoding, never changed (or nil)
	doc  Document // else the document, when the query built it (projection)
	err  error
	opts codec.DecodeOptions // the DB's WithBSONOptions
}

// Err implements ttldb.SingleResult.Err, whose documentation is the contract.
func (r SingleResult) Err() error { return r.err }

// Decode implements ttldb.SingleResult.Decode, whose documentation is the contract.
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
	return codec.DecodeIntoWith(enc, v, r.opts)
}

// Document implements ttldb.SingleResult.Document, whose documentation is the contract.
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
