package ttldb

import (
	"github.com/ttldb/ttldb/internal/engine"
)

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
// A value of a named type whose kind is one of these is stored as that
// kind: a time.Duration as an int64, a `type Level string` as a string, a
// []Level as a []string, a named map[string]any as a document; it comes
// back as that kind. json.Number is the exception: it is stored as the
// number it holds, an int64 where it fits, else a float64 (so
// {n: json.Number("5")} matches 5), and one that is not a JSON number, or
// is beyond float64's range, is rejected. Strings and field names must be
// valid UTF-8, so that whatever is stored can be written as JSON, logged
// or used as a metric label (MongoDB's drivers refuse invalid UTF-8 too).
// A document nests at most 100 levels (MongoDB's limit): the top-level
// document is level 0 and each nested document or array adds one.
//
// Anything else (channels, funcs, structs, other pointers, maps with other
// key types, cyclic maps, deeper nesting, invalid UTF-8) is rejected with
// ErrInvalidDocument naming the path.
//
// Writes also take a document as a struct, a non-nil pointer to one, or
// another map with string keys. A struct is stored as the document of its
// exported fields, named as MongoDB's Go driver names them: the tag
// `ttldb:"name,omitempty,inline"` if present, else `bson:"..."`, else the
// field's name lowercased entirely (UserID is "userid"); "-" skips a
// field. omitempty leaves out an empty field (by its IsZero method if it
// has one, as time.Time and ObjectID do; else a zero number, false, "", a
// nil pointer or interface, a slice or map of length 0; a struct is never
// empty). An embedded struct is a nested document named after its type,
// lowercased, unless tagged inline (the driver's rule); inline on a struct
// or a pointer to one stores its fields as the outer document's, and on a
// map with string keys stores its entries there (and receives, when
// decoding, the fields no other field names). Inside a struct, at any
// depth and behind interfaces too, values may also be pointers (nil is
// null), structs, slices and maps with string keys of any storable
// element, types defined from time.Time (dates) and 12-byte arrays
// (ObjectIDs, the driver's included); a nil slice or map is null. A field
// of an unsupported type (chan, func, complex, a map with other keys, other
// arrays) is refused with ErrInvalidDocument naming it, even when it is
// zero: tag it "-". The plan of each struct type is computed once and
// cached. Filters and updates take values by
// the same rules (and normalize them the same way before they match or
// plan), refusing others with ErrInvalidFilter or ErrInvalidUpdate. A collection copies a document on the way in and on the way out, so
// a caller may change a map after handing it over, or one that was handed
// back, without changing what is stored.
type Document = engine.Document

// DocumentError reports a value that cannot be stored, with the dotted path
// to it (Path, "" for the document itself) and what is wrong with it
// (Reason). It wraps ErrInvalidDocument.
type DocumentError = engine.DocumentError
