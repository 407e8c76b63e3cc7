package ttldb

import "github.com/ttldb/ttldb/internal/codec"

// Document is one stored record: a JSON-like tree of values keyed by field
// name. A document's values may be:
//
//   - nested documents: Document or map[string]any;
//   - arrays: []any, []Document, []map[string]any, and slices of the
//     scalars below ([]string, []int64, []time.Time, …);
//   - scalars: string, bool, nil, every Go integer and float kind,
//     time.Time (and *time.Time, stored as the time.Time it points to, or
//     nil), []byte and ObjectID.
//
// Anything else (channels, funcs, structs, other pointers, maps with other
// key types, cyclic maps) is rejected with ErrInvalidDocument naming the
// path. A collection copies a document on the way in and on the way out, so
// a caller may change a map after handing it over, or one that was handed
// back, without changing what is stored.
type Document = map[string]any

// DocumentError reports a value that cannot be stored, with the dotted path
// to it (Path, "" for the document itself) and what is wrong with it
// (Reason). It wraps ErrInvalidDocument.
type DocumentError = codec.DocumentError
