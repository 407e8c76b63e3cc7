package ttldb

import (
	"context"
	"time"

	"github.com/ttldb/ttldb/internal/engine"
	"github.com/ttldb/ttldb/internal/ttlvalue"
)

// TTLValueForms says which values a TTL index reads as dates.
//
// Whatever the forms, a value that is not read as a date keeps the document
// out of the index: it never expires, and no error is raised (MongoDB: "If
// the indexed field in a document doesn't contain one or more date values,
// the document will not expire"; ArangoDB: "Using an invalid date string
// value ... will prevent the document from being inserted into the TTL
// index ... No error is raised however").
type TTLValueForms = ttlvalue.Forms

const (
	// TTLValuesDatesAndArango (the default, zero value) reads time.Time
	// values (of any year) and, as ArangoDB does, non-negative numbers as
	// Unix seconds (fractions kept) and ISO 8601 strings of the forms
	// "YYYY-MM-DD" and "YYYY-MM-DDTHH:MM:SS[.fraction][Z|±HH:MM]"
	// (UTC when no offset is given) for instants from 1970-01-01T00:00:00Z
	// on. ArangoDB turns a string into Unix seconds and never indexes a
	// negative timestamp, so a string before 1970 never expires, like a
	// negative number; a time.Time before 1970 keeps MongoDB's rule and
	// does expire.
	TTLValuesDatesAndArango = ttlvalue.DatesAndArango
	// TTLValuesDatesOnly is MongoDB's strict mode: only time.Time values
	// (and arrays of them) are dates; numbers and strings are not.
	TTLValuesDatesOnly = ttlvalue.DatesOnly
)

// ExpiresAt returns when the document with the given _id expires under the
// collection's TTL indexes: the earliest of its thresholds (indexed date +
// ExpireAfterSeconds). expires is false if it never will (no TTL index, or
// no date in the indexed fields). A missing document is ErrNotFound. The
// answer is for the document as stored now: a later write can change it,
// and the monitor deletes the document at its first pass at or after the
// threshold.
func (c *Collection) ExpiresAt(ctx context.Context, id any) (time.Time, bool, error) {
	return (*engine.Collection)(c).ExpiresAt(ctx, id)
}

// CollModIndex is the index part of MongoDB's collMod command:
// {collMod: <collection>, index: {keyPattern | name, expireAfterSeconds}}.
type CollModIndex = engine.CollModIndex

// CollModResult reports what CollMod changed, as MongoDB's reply does.
type CollModResult = engine.CollModResult

// CollMod changes the ExpireAfterSeconds of a TTL index, or turns a
// non-TTL single-field index into a TTL index (reading dates in the default
// TTLValueForms), as MongoDB's collMod does. With TTLPaused alone it
// pauses or resumes the TTL deletion of the whole collection (as
// CockroachDB's ttl_pause): the monitor skips it while HideExpired still
// hides its expired documents, and the pause, an op like any CollMod, is
// logged, replicated and kept by snapshots (SetTTLMonitorEnabled, by
// contrast, stops this DB's whole monitor, in memory only). Changing the
// value re-keys nothing: the TTL B-tree is keyed by the indexed date.
// Beware, as MongoDB warns: lowering the value can make many documents
// eligible for deletion at once.
//
// It fails with ErrNotFound for a missing collection or index,
// ErrInvalidTTL for a bad value, an _id index, a compound index or a capped
// collection, ErrInvalidIndex for an unclear selection, and
// ErrInvalidOptions for TTLPaused given with an index or a value.
func (db *DB) CollMod(ctx context.Context, collection string, m CollModIndex) (CollModResult, error) {
	return (*engine.DB)(db).CollMod(ctx, collection, m)
}

// CollMod is DB.CollMod for this collection.
func (c *Collection) CollMod(ctx context.Context, m CollModIndex) (CollModResult, error) {
	return (*engine.Collection)(c).CollMod(ctx, m)
}
