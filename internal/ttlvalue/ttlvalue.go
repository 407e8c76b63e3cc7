// Package ttlvalue decides which stored values a TTL index reads as dates,
// and which instant each one names: time.Time values always, and under
// ArangoDB's forms (the default) non-negative Unix seconds and ISO 8601
// strings. It owns the ISO 8601 parser and formatter those forms need.
// ttldb re-exports Forms as TTLValueForms.
package ttlvalue

import (
	"math"
	"strconv"
	"time"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/query"
)

// Forms says which values a TTL index reads as dates.
//
// Whatever the forms, a value that is not read as a date keeps the document
// out of the index: it never expires, and no error is raised (MongoDB: "If
// the indexed field in a document doesn't contain one or more date values,
// the document will not expire"; ArangoDB: "Using an invalid date string
// value ... will prevent the document from being inserted into the TTL
// index ... No error is raised however").
type Forms int

const (
	// DatesAndArango (the default, zero value) reads time.Time
	// values (of any year) and, as ArangoDB does, non-negative numbers as
	// Unix seconds (fractions kept) and ISO 8601 strings of the forms
	// "YYYY-MM-DD" and "YYYY-MM-DDTHH:MM:SS[.fraction][Z|±HH:MM]"
	// (UTC when no offset is given) for instants from 1970-01-01T00:00:00Z
	// on. ArangoDB turns a string into Unix seconds and never indexes a
	// negative timestamp, so a string before 1970 never expires, like a
	// negative number; a time.Time before 1970 keeps MongoDB's rule and
	// does expire.
	DatesAndArango Forms = iota
	// DatesOnly is MongoDB's strict mode: only time.Time values
	// (and arrays of them) are dates; numbers and strings are not.
	DatesOnly
)

// String returns the constant's name without its TTLValues prefix
// ("DatesAndArango", "DatesOnly"), or "TTLValueForms(n)" for other values.
func (f Forms) String() string {
	switch f {
	case DatesAndArango:
		return "DatesAndArango"
	case DatesOnly:
		return "DatesOnly"
	}
	return "TTLValueForms(" + strconv.Itoa(int(f)) + ")"
}

// Date returns the date a TTL index keys a document by, given the values
// PathValues found at the indexed path (vals; found=false or empty means
// missing). Arrays among vals are expanded one level (their elements count;
// an array nested in an array does not). The EARLIEST date among all
// date-like values wins (MongoDB: "uses lowest (earliest) date value in the
// array"). Values that are not dates under forms (nil, bool, nested
// documents, binary, ObjectIDs, non-date strings, strings before 1970,
// negative/NaN/Inf numbers, or anything but time.Time in DatesOnly mode) are skipped; ok=false if no
// date remains. Any forms value other than DatesAndArango reads
// only time.Time values, so a bad setting never makes more documents expire.
//
// date is in UTC, without a monotonic clock reading. Every time.Time is a
// date, including ones before 1970 and the zero time.Time (year 1); an ISO
// string is one only from 1970 on (see DatesAndArango).
//
// Date is on every write's path: it does not allocate unless vals holds a
// typed slice other than []time.Time and []any.
func Date(vals []any, forms Forms) (date time.Time, ok bool) {
	var e earliestDate
	for _, v := range vals {
		switch x := v.(type) {
		case []time.Time: // typed fast path: arrayElements would box every element
			for _, t := range x {
				e.add(t, true)
			}
		case []any:
			for _, el := range x {
				e.add(scalarDate(el, forms))
			}
		default:
			if d, isDate := scalarDate(v, forms); isDate {
				e.add(d, true)
			} else if elems, isArr := codec.ArrayElements(v); isArr {
				for _, el := range elems {
					e.add(scalarDate(el, forms))
				}
			}
		}
	}
	if !e.ok {
		return time.Time{}, false
	}
	return e.date.UTC(), true
}

// earliestDate accumulates the minimum of the dates Date finds.
type earliestDate struct {
	date time.Time
	ok   bool
}

// add keeps d if it is a date (ok) earlier than any kept so far.
func (e *earliestDate) add(d time.Time, ok bool) {
	if ok && (!e.ok || d.Before(e.date)) {
		e.date, e.ok = d, true
	}
}

// scalarDate reads one non-array value as a date under forms.
func scalarDate(v any, forms Forms) (time.Time, bool) {
	if t, ok := v.(time.Time); ok {
		return t, true
	}
	if forms != DatesAndArango {
		return time.Time{}, false
	}
	if s, ok := v.(string); ok {
		return arangoStringDate(s)
	}
	return unixSecondsDate(v)
}

// arangoStringDate reads an ISO 8601 string as ArangoDB's TTL index does:
// parsed (ParseISODate), then turned into Unix seconds, which must not be
// negative. A string before 1970-01-01T00:00:00Z, even by a nanosecond, is
// no date, as a negative number is not.
func arangoStringDate(s string) (time.Time, bool) {
	d, ok := ParseISODate(s)
	if !ok || d.Unix() < 0 { // Unix floors: 1969-12-31T23:59:59.9Z is -1
		return time.Time{}, false
	}
	return d, true
}

// maxUnixSeconds caps the numbers unixSecondsDate reads: 2^62 s, about 146
// billion years. Up to it, a time.Time plus any expireAfterSeconds (at most
// 2^31-1 s in MongoDB) cannot overflow time.Time's int64 seconds; beyond it a
// number is no meaningful date. Exact as a float64.
const maxUnixSeconds = 1 << 62

// unixSecondsDate converts a number of any Go int/uint/float kind, in Unix
// seconds, into a UTC time. Fractions are kept, rounded to the nearest
// nanosecond of the float64's exact value (so only as precise as the float
// is: about 0.24 µs for present-day timestamps). ok=false for non-numbers,
// negative values, NaN, ±Inf and values above maxUnixSeconds (2^62). -0.0 is
// the epoch.
//
// There is no guessing of units: a millisecond timestamp such as
// 1550165973000 is read as seconds, a date in the year 51092, so a document
// holding one effectively never expires (ArangoDB reads it the same way).
func unixSecondsDate(v any) (time.Time, bool) {
	n, ok := query.ToNumber(v)
	if !ok {
		return time.Time{}, false
	}
	switch n.Kind {
	case 'i':
		if n.I < 0 || n.I > maxUnixSeconds {
			return time.Time{}, false
		}
		return time.Unix(n.I, 0).UTC(), true
	case 'u': // only integers above MaxInt64, all beyond the cap
		return time.Time{}, false
	}
	f := n.F
	if !(f >= 0 && f <= maxUnixSeconds) { // also false for NaN; +Inf is above
		return time.Time{}, false
	}
	sec := math.Floor(f)
	nsec := math.Round((f - sec) * 1e9) // f-sec is exact; time.Unix carries 1e9 over
	return time.Unix(int64(sec), int64(nsec)).UTC(), true
}

// Lengths of the fixed-width parts of an ISO date string.
const (
	isoDateLen     = len("2006-01-02")
	isoDateTimeLen = len("2006-01-02T15:04:05")
	isoMaxFracLen  = 9 // nanoseconds, the precision of time.Time
	isoOffsetLen   = len("+07:00")
	// isoMaxLen is the longest string ParseISODate accepts.
	isoMaxLen = isoDateTimeLen + 1 + isoMaxFracLen + isoOffsetLen
)

// isoMinUnix and isoMaxUnix bound the Unix seconds of the instants
// ParseISODate returns: years 0000–9999 in UTC
// (0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z), so FormatISODate
// can write every one of them back in a form ParseISODate reads.
const (
	isoMinUnix = -62167219200
	isoMaxUnix = 253402300799
)

// secondsPerDay turns days since the epoch into Unix seconds (no leap
// seconds, as in Unix time).
const secondsPerDay = 24 * 60 * 60

// ParseISODate parses the ISO 8601 forms of ArangoDB's TTL index (reference
// 003's table) and returns the instant in UTC:
//
//	YYYY-MM-DD                          midnight UTC
//	YYYY-MM-DDTHH:MM:SS[.F][Z|±HH:MM]   no offset means UTC
//
// It is strict, without allocating:
//   - every field has fixed width: a 4-digit year 0000–9999 (no sign),
//     2-digit month 01–12, day valid for the month and year (Feb 29 only in
//     proleptic Gregorian leap years), hour 00–23 (no 24:00), minute 00–59,
//     second 00–59 (no leap second 60: time.Time cannot hold one);
//   - seconds are required once there is a time ("2019-05-27T21:20" and
//     "2019-05-27T" are rejected);
//   - the fraction follows the seconds after a '.', with 1 to 9 digits
//     (nanoseconds; no ',' separator);
//   - the offset is "Z" or ±HH:MM with HH 00–23 and MM 00–59, as RFC 3339
//     has it ("-00:00" is UTC); "+0130", "+01" and an offset after a bare
//     date are rejected;
//   - 'T' and 'Z' must be upper case; no spaces, leading or trailing text;
//   - the resulting UTC instant must lie in years 0000–9999 (so
//     "0000-01-01T00:00:00+01:00" is rejected), which keeps FormatISODate
//     able to write it back.
func ParseISODate(s string) (time.Time, bool) {
	if len(s) < isoDateLen || len(s) > isoMaxLen {
		return time.Time{}, false
	}
	year, month, day, ok := parseISOCalendarDate(s[:isoDateLen])
	if !ok {
		return time.Time{}, false
	}
	days := daysSinceEpoch(year, month, day)
	if len(s) == isoDateLen {
		return time.Unix(days*secondsPerDay, 0).UTC(), true
	}
	if len(s) < isoDateTimeLen || s[isoDateLen] != 'T' {
		return time.Time{}, false
	}
	hour, minute, second, ok := parseISOClock(s[isoDateLen+1 : isoDateTimeLen])
	if !ok {
		return time.Time{}, false
	}
	nsec, rest, ok := parseISOFraction(s[isoDateTimeLen:])
	if !ok {
		return time.Time{}, false
	}
	offset, ok := parseISOOffset(rest)
	if !ok {
		return time.Time{}, false
	}
	sec := days*secondsPerDay + int64(hour*3600+minute*60+second-offset)
	if sec < isoMinUnix || sec > isoMaxUnix {
		return time.Time{}, false
	}
	return time.Unix(sec, int64(nsec)).UTC(), true
}

// parseISOCalendarDate parses "YYYY-MM-DD" and checks the day exists.
func parseISOCalendarDate(s string) (year int, month time.Month, day int, ok bool) {
	y, okY := fixedDigits(s[0:4])
	m, okM := fixedDigits(s[5:7])
	d, okD := fixedDigits(s[8:10])
	if !okY || !okM || !okD || s[4] != '-' || s[7] != '-' ||
		m < 1 || m > 12 || d < 1 || d > daysIn(time.Month(m), y) {
		return 0, 0, 0, false
	}
	return y, time.Month(m), d, true
}

// parseISOClock parses "HH:MM:SS".
func parseISOClock(s string) (hour, minute, second int, ok bool) {
	h, okH := fixedDigits(s[0:2])
	m, okM := fixedDigits(s[3:5])
	sec, okS := fixedDigits(s[6:8])
	if !okH || !okM || !okS || s[2] != ':' || s[5] != ':' || h > 23 || m > 59 || sec > 59 {
		return 0, 0, 0, false
	}
	return h, m, sec, true
}

// parseISOFraction parses an optional ".F" (1–9 digits) at the start of s
// and returns it in nanoseconds with what follows it.
func parseISOFraction(s string) (nsec int, rest string, ok bool) {
	if s == "" || s[0] != '.' {
		return 0, s, true
	}
	n := 1
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	digits := n - 1
	if digits == 0 || digits > isoMaxFracLen {
		return 0, "", false
	}
	nsec, _ = fixedDigits(s[1:n])
	for range isoMaxFracLen - digits {
		nsec *= 10
	}
	return nsec, s[n:], true
}

// parseISOOffset parses what follows the time: nothing or "Z" (UTC), or
// ±HH:MM. It returns the offset east of UTC in seconds.
func parseISOOffset(s string) (seconds int, ok bool) {
	if s == "" || s == "Z" {
		return 0, true
	}
	if len(s) != isoOffsetLen || s[3] != ':' {
		return 0, false
	}
	sign := 1
	switch s[0] {
	case '+':
	case '-':
		sign = -1
	default:
		return 0, false
	}
	h, okH := fixedDigits(s[1:3])
	m, okM := fixedDigits(s[4:6])
	if !okH || !okM || h > 23 || m > 59 {
		return 0, false
	}
	return sign * (h*3600 + m*60), true
}

// fixedDigits parses s, which must be all ASCII digits (no sign), as a
// decimal number. Callers pass at most 9 digits, so it cannot overflow.
func fixedDigits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// isDigit accepts ASCII digits only, never other Unicode digits.
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// daysIn returns the number of days of month m in year y of the proleptic
// Gregorian calendar (the one time.Time uses; year 0 is a leap year).
func daysIn(m time.Month, y int) int {
	switch m {
	case time.February:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// daysSinceEpoch returns the number of days from 1970-01-01 to the given
// proleptic Gregorian date. It is Howard Hinnant's days_from_civil, cheaper
// than time.Date, which also normalizes and consults a location. Years count
// from March so that the leap day ends a year; eras are 400-year cycles.
func daysSinceEpoch(year int, month time.Month, day int) int64 {
	y, m := year, int(month)
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400 // floor division: only year 0's Jan/Feb get here
	}
	yoe := y - era*400                      // year of era, 0–399
	doy := (153*((m+9)%12)+2)/5 + day - 1   // day of the March-based year, 0–365
	doe := yoe*365 + yoe/4 - yoe/100 + doy  // day of era, 0–146096
	return int64(era*146097 + doe - 719468) // 719468 days from 0000-03-01 to 1970-01-01
}

// FormatISODate formats t as the canonical string ParseISODate accepts:
// UTC, "YYYY-MM-DDTHH:MM:SS" then the fraction with trailing zeros removed
// (none at all for whole seconds), then "Z" — e.g. "2019-05-27T19:50:00.123Z".
// ParseISODate(FormatISODate(t)) equals t for every t in years 0000–9999 UTC
// (all the instants ParseISODate returns); other years format with more or
// fewer year digits, which ParseISODate rejects.
func FormatISODate(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.999999999Z")
}
