// Package schema owns collection validators: a compiled $jsonSchema
// (CompileValidator) that every insert, update and replacement must satisfy,
// and the ValidationError that reports a failure.
package schema
