package engine

import (
	"encoding/base64"
	"strconv"

	"github.com/ttldb/ttldb/internal/codec"
)

// MarshalJSON writes the document as MongoDB's relaxed Extended JSON
// (v2): _id first, then the fields sorted by name; dates as
// {"$date": "<RFC 3339, UTC, nanoseconds>"} ({"$date": {"$numberLong":
// "<ms>"}} outside years 1970-9999), ObjectIDs as {"$oid": "<hex>"},
// binary as {"$binary": {"base64": ..., "subType": "00"}}, integers and
// floats as JSON numbers (floats always with a fraction or exponent;
// NaN and ±Inf as {"$numberDouble": ...}). A nil RawDocument is null.
func (r RawDocument) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("null"), nil
	}
	return codec.AppendExtJSON(nil, r), nil
}

// MarshalJSON writes the event as one JSON object, the form of MongoDB's
// change events in relaxed Extended JSON (documents as
// RawDocument.MarshalJSON writes them), fields in this order, those
// without a value left out:
//
//	{"_id": {"_data": "43:0"},          // ID, the resume token's text form
//	 "operationType": "delete",
//	 "clusterTime": 42,                 // the op's Seq (a number, not a Timestamp)
//	 "wallTime": {"$date": "2026-01-01T00:00:00Z"},
//	 "ns": {"coll": "sessions"},
//	 "lsid": {"id": {"$binary": {"base64": "...", "subType": "04"}}}, // a transaction's
//	 "txnNumber": 3,                    // a transaction's
//	 "documentKey": {"_id": ...},
//	 "updateDescription": {"updatedFields": {...}, "removedFields": [...],
//	                       "truncatedArrays": [], "disambiguatedPaths": {...}},
//	 "fullDocument": {...},
//	 "fullDocumentBeforeChange": {...},
//	 "operationDescription": {...},
//	 "expired": true,                   // ttldb: a TTL deletion
//	 "index": "lastSeen_1",             // ttldb: its TTL index (or the index of an index event)
//	 "cutoff": {"$date": "..."}}        // ttldb: the instant it deleted against
//
// The form is stable: fields may be added, never renamed or removed.
func (e ChangeEvent) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 256)), nil
}

// AppendJSON appends the event's JSON form (see MarshalJSON) to dst, for
// writers that reuse a buffer.
func (e ChangeEvent) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"_id":{"_data":"`...)
	dst = strconv.AppendUint(dst, e.ID.Seq, 10)
	dst = append(dst, ':')
	dst = strconv.AppendUint(dst, uint64(e.ID.Index), 10)
	dst = append(dst, `"},"operationType":`...)
	dst = codec.AppendJSONString(dst, string(e.OperationType))
	dst = append(dst, `,"clusterTime":`...)
	dst = strconv.AppendUint(dst, e.ClusterTime, 10)
	dst = append(dst, `,"wallTime":`...)
	dst = codec.AppendExtJSONDate(dst, e.WallTime)
	dst = append(dst, `,"ns":{"coll":`...)
	dst = codec.AppendJSONString(dst, e.Ns.Coll)
	dst = append(dst, '}')
	if !e.Txn.IsZero() {
		dst = append(dst, `,"lsid":{"id":{"$binary":{"base64":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, e.Txn.LSID[:])
		dst = append(dst, `","subType":"04"}}},"txnNumber":`...)
		dst = strconv.AppendInt(dst, e.Txn.Number, 10)
	}
	raw := func(name string, r RawDocument) {
		if r != nil {
			dst = append(dst, ',', '"')
			dst = append(dst, name...)
			dst = append(dst, '"', ':')
			dst = codec.AppendExtJSON(dst, r)
		}
	}
	raw("documentKey", e.DocumentKey)
	if u := e.UpdateDescription; u != nil {
		dst = append(dst, `,"updateDescription":{"updatedFields":`...)
		dst = codec.AppendExtJSONValue(dst, map[string]any(u.UpdatedFields))
		dst = append(dst, `,"removedFields":[`...)
		for i, f := range u.RemovedFields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = codec.AppendJSONString(dst, f)
		}
		dst = append(dst, `],"truncatedArrays":[`...)
		for i, a := range u.TruncatedArrays {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"field":`...)
			dst = codec.AppendJSONString(dst, a.Field)
			dst = append(dst, `,"newSize":`...)
			dst = strconv.AppendInt(dst, int64(a.NewSize), 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
		if u.DisambiguatedPaths != nil {
			dst = append(dst, `,"disambiguatedPaths":`...)
			dst = codec.AppendExtJSONValue(dst, map[string]any(u.DisambiguatedPaths))
		}
		dst = append(dst, '}')
	}
	raw("fullDocument", e.FullDocument)
	raw("fullDocumentBeforeChange", e.FullDocumentBeforeChange)
	raw("operationDescription", e.OperationDescription)
	if e.Expired {
		dst = append(dst, `,"expired":true`...)
	}
	if e.Index != "" {
		dst = append(dst, `,"index":`...)
		dst = codec.AppendJSONString(dst, e.Index)
	}
	if e.Expired {
		dst = append(dst, `,"cutoff":`...)
		dst = codec.AppendExtJSONDate(dst, e.Cutoff)
	}
	return append(dst, '}')
}
