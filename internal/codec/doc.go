// Package codec owns the document: the value model (what a document may
// hold, ObjectID, DocumentError, nesting limits), the private binary
// encoding every stored document is kept in, and the walks over documents
// and encodings (dotted paths, fields read without decoding the rest).
//
// The encoding is validating: Encode is the one place the rules of what a
// document may hold are enforced.
package codec
