package query

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

// dtDate parses an RFC 3339 date (a missing zone is UTC) as a UTC time.
func dtDate(t *testing.T, s string) time.Time {
	t.Helper()
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999", "2006-01-02"} {
		if d, err := time.Parse(layout, s); err == nil {
			return d.UTC()
		}
	}
	t.Fatalf("bad test date %q", s)
	return time.Time{}
}

func dtDecimal(t *testing.T, s string) bson.Decimal128 {
	t.Helper()
	d, err := bson.ParseDecimal128(s)
	require.NoError(t, err)
	return d
}

// dtEval compiles expr and evaluates it against doc.
func dtEval(t *testing.T, expr any, doc codec.Document) (any, error) {
	t.Helper()
	e, err := CompileExpr(expr)
	require.NoError(t, err, "compile %v", expr)
	return e.Evaluate(&Env{Root: doc, Current: doc})
}

// dtCase is one expression evaluated against one document.
type dtCase struct {
	name string
	expr any
	doc  codec.Document
	want any
}

func runDateCases(t *testing.T, cases []dtCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dtEval(t, tc.expr, tc.doc)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// dtErrCase is an expression that compiles (or not) and fails.
type dtErrCase struct {
	name    string
	expr    any
	doc     codec.Document
	compile bool // the error is a compile error (ErrInvalidOptions)
}

func runDateErrors(t *testing.T, cases []dtErrCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := CompileExpr(tc.expr)
			if tc.compile {
				require.Error(t, err)
				assert.True(t, errors.Is(err, errs.ErrInvalidOptions), "%v", err)
				return
			}
			require.NoError(t, err)
			_, err = e.Evaluate(&Env{Root: tc.doc, Current: tc.doc})
			require.Error(t, err)
			assert.True(t, errors.Is(err, errs.ErrExpression), "%v", err)
		})
	}
}

// TestManual_dateParts reproduces the manual's example of $year,
// $month, $dayOfMonth, $hour, $minute, $second, $millisecond,
// $dayOfYear, $dayOfWeek and $week (the document dated
// 2014-01-01T08:15:39.736Z), and of $isoWeek, $isoWeekYear and
// $isoDayOfWeek (2016-01-01: ISO week 53 of 2015, a Friday).
func TestManual_dateParts(t *testing.T) {
	doc := codec.Document{"date": dtDate(t, "2014-01-01T08:15:39.736Z"), "iso": dtDate(t, "2016-01-01")}
	runDateCases(t, []dtCase{
		{"$year", codec.Document{"$year": "$date"}, doc, int32(2014)},
		{"$month", codec.Document{"$month": "$date"}, doc, int32(1)},
		{"$dayOfMonth", codec.Document{"$dayOfMonth": "$date"}, doc, int32(1)},
		{"$hour", codec.Document{"$hour": "$date"}, doc, int32(8)},
		{"$minute", codec.Document{"$minute": "$date"}, doc, int32(15)},
		{"$second", codec.Document{"$second": "$date"}, doc, int32(39)},
		{"$millisecond", codec.Document{"$millisecond": "$date"}, doc, int32(736)},
		{"$dayOfYear", codec.Document{"$dayOfYear": "$date"}, doc, int32(1)},
		{"$dayOfWeek", codec.Document{"$dayOfWeek": "$date"}, doc, int32(4)},
		{"$week", codec.Document{"$week": "$date"}, doc, int32(0)},
		{"$isoWeek", codec.Document{"$isoWeek": "$iso"}, doc, int32(53)},
		{"$isoWeekYear", codec.Document{"$isoWeekYear": "$iso"}, doc, int64(2015)},
		{"$isoDayOfWeek", codec.Document{"$isoDayOfWeek": "$iso"}, doc, int32(5)},
	})
}

// TestDatePartsTimezones reads parts in zones: Olson names, the three
// offset forms, and New York across both daylight saving changes of
// 2021 (March 14 07:00Z, November 7 06:00Z).
func TestDatePartsTimezones(t *testing.T) {
	d := dtDate(t, "2014-01-01T08:15:39.736Z")
	part := func(op string, date any, tz string) codec.Document {
		return codec.Document{op: codec.Document{"date": date, "timezone": tz}}
	}
	runDateCases(t, []dtCase{
		{"New York hour", part("$hour", d, "America/New_York"), nil, int32(3)},
		{"+04:30 minute", part("$minute", d, "+04:30"), nil, int32(45)},
		{"+04:30 hour", part("$hour", d, "+04:30"), nil, int32(12)},
		{"-0530 hour", part("$hour", d, "-0530"), nil, int32(2)},
		{"-0530 minute", part("$minute", d, "-0530"), nil, int32(45)},
		{"+03 hour", part("$hour", d, "+03"), nil, int32(11)},
		{"GMT", part("$hour", d, "GMT"), nil, int32(8)},
		{"UTC", part("$hour", d, "UTC"), nil, int32(8)},
		{"day moves back across midnight", part("$dayOfMonth", dtDate(t, "2014-01-01T03:00:00Z"), "America/New_York"), nil, int32(31)},
		{"year moves back", part("$year", dtDate(t, "2014-01-01T03:00:00Z"), "America/New_York"), nil, int32(2013)},
		{"dayOfWeek in the zone", part("$dayOfWeek", dtDate(t, "2014-01-01T03:00:00Z"), "America/New_York"), nil, int32(3)},
		{"before spring forward", part("$hour", dtDate(t, "2021-03-14T06:59:59Z"), "America/New_York"), nil, int32(1)},
		{"after spring forward", part("$hour", dtDate(t, "2021-03-14T07:00:00Z"), "America/New_York"), nil, int32(3)},
		{"first 01:30 in the fall (EDT)", part("$hour", dtDate(t, "2021-11-07T05:30:00Z"), "America/New_York"), nil, int32(1)},
		{"second 01:30 in the fall (EST)", part("$hour", dtDate(t, "2021-11-07T06:30:00Z"), "America/New_York"), nil, int32(1)},
		{"timezone from a field", codec.Document{"$hour": codec.Document{"date": "$d", "timezone": "$tz"}},
			codec.Document{"d": d, "tz": "Asia/Kolkata"}, int32(13)},
	})
	got, err := dtEval(t, codec.Document{"$hour": codec.Document{"date": d, "timezone": nil}}, nil)
	require.NoError(t, err)
	assert.Nil(t, got)
}

// TestDatePartsInputs: dates, ObjectIDs (their time), timestamps (their
// seconds), the array form, null and missing.
func TestDatePartsInputs(t *testing.T) {
	oid := bson.NewObjectIDFromTimestamp(dtDate(t, "2020-05-18T14:10:30Z"))
	runDateCases(t, []dtCase{
		{"ObjectID", codec.Document{"$month": "$_id"}, codec.Document{"_id": oid}, int32(5)},
		{"ObjectID minute", codec.Document{"$minute": "$_id"}, codec.Document{"_id": oid}, int32(10)},
		{"timestamp", codec.Document{"$year": "$ts"}, codec.Document{"ts": bson.Timestamp{T: 1500000000, I: 1}}, int32(2017)},
		{"timestamp hour", codec.Document{"$hour": "$ts"}, codec.Document{"ts": bson.Timestamp{T: 1500000000, I: 1}}, int32(2)},
		{"array form", codec.Document{"$year": []any{"$d"}}, codec.Document{"d": dtDate(t, "1999-12-31T23:59:59Z")}, int32(1999)},
		{"null", codec.Document{"$year": nil}, nil, nil},
		{"missing", codec.Document{"$year": "$nope"}, nil, nil},
		{"missing in the document form", codec.Document{"$year": codec.Document{"date": "$nope", "timezone": "UTC"}}, nil, nil},
		{"an expression as the argument", codec.Document{"$year": codec.Document{"$ifNull": []any{"$nope", "$d"}}}, codec.Document{"d": dtDate(t, "2001-02-03")}, int32(2001)},
		{"$week on a Sunday", codec.Document{"$week": dtDate(t, "2016-01-03")}, nil, int32(1)},
		{"$week at the end of a year", codec.Document{"$week": dtDate(t, "2016-12-31")}, nil, int32(52)},
		{"$week 53", codec.Document{"$week": dtDate(t, "2012-12-30")}, nil, int32(53)},
		{"$isoWeek 1 in December", codec.Document{"$isoWeek": dtDate(t, "2014-12-29")}, nil, int32(1)},
		{"$isoWeekYear ahead", codec.Document{"$isoWeekYear": dtDate(t, "2014-12-29")}, nil, int64(2015)},
		{"$isoDayOfWeek Sunday", codec.Document{"$isoDayOfWeek": dtDate(t, "2016-01-03")}, nil, int32(7)},
		{"$dayOfWeek Sunday", codec.Document{"$dayOfWeek": dtDate(t, "2016-01-03")}, nil, int32(1)},
		{"$dayOfYear leap", codec.Document{"$dayOfYear": dtDate(t, "2016-12-31")}, nil, int32(366)},
	})
	runDateErrors(t, []dtErrCase{
		{"a string", codec.Document{"$year": "x"}, nil, false},
		{"a number", codec.Document{"$month": 5}, nil, false},
		{"unknown zone", codec.Document{"$hour": codec.Document{"date": "$$NOW", "timezone": "Mars/Olympus_Mons"}}, nil, false},
		{"Local is not a zone name", codec.Document{"$hour": codec.Document{"date": "$$NOW", "timezone": "Local"}}, nil, false},
		{"a path is not a zone name", codec.Document{"$hour": codec.Document{"date": "$$NOW", "timezone": "../etc/passwd"}}, nil, false},
		{"zone not a string", codec.Document{"$hour": codec.Document{"date": "$$NOW", "timezone": 5}}, nil, false},
		{"bad offset minutes", codec.Document{"$hour": codec.Document{"date": "$$NOW", "timezone": "+05:75"}}, nil, false},
		{"bad offset length", codec.Document{"$hour": codec.Document{"date": "$$NOW", "timezone": "+5"}}, nil, false},
		{"unknown argument", codec.Document{"$hour": codec.Document{"date": "$$NOW", "zone": "UTC"}}, nil, true},
		{"no date", codec.Document{"$hour": codec.Document{"timezone": "UTC"}}, nil, true},
		{"two arguments", codec.Document{"$hour": []any{"$$NOW", "$$NOW"}}, nil, true},
	})
}

// TestManual_dateToString reproduces the manual's example, and checks
// every specifier.
func TestManual_dateToString(t *testing.T) {
	doc := codec.Document{"_id": 1, "item": "abc", "price": 10, "quantity": 2, "date": dtDate(t, "2014-01-01T08:15:39.736Z")}
	f := func(format, tz string) codec.Document {
		args := codec.Document{"format": format, "date": "$date"}
		if tz != "" {
			args["timezone"] = tz
		}
		return codec.Document{"$dateToString": args}
	}
	runDateCases(t, []dtCase{
		{"yearMonthDayUTC", f("%Y-%m-%d", ""), doc, "2014-01-01"},
		{"timewithOffsetNY", f("%H:%M:%S:%L%z", "America/New_York"), doc, "03:15:39:736-0500"},
		{"timewithOffset430", f("%H:%M:%S:%L%z", "+04:30"), doc, "12:45:39:736+0430"},
		{"minutesOffsetNY", f("%Z", "America/New_York"), doc, "-300"},
		{"minutesOffset430", f("%Z", "+04:30"), doc, "270"},
		{"default format", codec.Document{"$dateToString": codec.Document{"date": "$date"}}, doc, "2014-01-01T08:15:39.736Z"},
		{"the other specifiers", f("%j %w %u %U %V %G %b %B %%", ""), doc, "001 4 3 00 01 2014 Jan January %"},
		{"ISO year differs", f("%G-W%V-%u", ""), codec.Document{"date": dtDate(t, "2016-01-01")}, "2015-W53-5"},
		{"New York in summer", f("%Y-%m-%d %H:%M %z", "America/New_York"), codec.Document{"date": dtDate(t, "2021-07-04T12:00:00Z")}, "2021-07-04 08:00 -0400"},
		{"literal text", f("at %H o'clock", ""), doc, "at 08 o'clock"},
		{"ObjectID", codec.Document{"$dateToString": codec.Document{"date": "$_id", "format": "%Y"}},
			codec.Document{"_id": bson.NewObjectIDFromTimestamp(dtDate(t, "2020-05-18T14:10:30Z"))}, "2020"},
		{"timestamp", codec.Document{"$dateToString": codec.Document{"date": bson.Timestamp{T: 1500000000}, "format": "%H:%M"}}, nil, "02:40"},
		{"null date", codec.Document{"$dateToString": codec.Document{"date": nil}}, nil, nil},
		{"missing date, onNull", codec.Document{"$dateToString": codec.Document{"date": "$nope", "onNull": "none"}}, nil, "none"},
		{"null format", codec.Document{"$dateToString": codec.Document{"date": "$date", "format": "$nope"}}, doc, nil},
		{"null timezone", codec.Document{"$dateToString": codec.Document{"date": "$date", "timezone": nil}}, doc, nil},
		{"format from a field", codec.Document{"$dateToString": codec.Document{"date": "$date", "format": "$f"}},
			codec.Document{"date": dtDate(t, "2014-01-01"), "f": "%d/%m"}, "01/01"},
		{"year 0", f("%Y", ""), codec.Document{"date": time.Date(0, 3, 1, 0, 0, 0, 0, time.UTC)}, "0000"},
	})
	runDateErrors(t, []dtErrCase{
		{"unknown specifier", f("%Q", ""), nil, true},
		{"trailing %", f("%Y%", ""), nil, true},
		{"format a number", codec.Document{"$dateToString": codec.Document{"date": "$$NOW", "format": 5}}, nil, true},
		{"unknown specifier from a field", codec.Document{"$dateToString": codec.Document{"date": "$$NOW", "format": "$f"}}, codec.Document{"f": "%x"}, false},
		{"year above 9999", f("%Y", ""), codec.Document{"date": time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, false},
		{"negative year", f("%Y", ""), codec.Document{"date": time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}, false},
		{"not a date", f("%Y", ""), codec.Document{"date": "2014-01-01"}, false},
		{"no date", codec.Document{"$dateToString": codec.Document{"format": "%Y"}}, nil, true},
	})
}

// TestManual_dateFromString reproduces the manual's examples: the
// behavior table, the logmessages collection (with a constant and a
// per-document timezone), onError and onNull.
func TestManual_dateFromString(t *testing.T) {
	fs := func(args codec.Document) codec.Document { return codec.Document{"$dateFromString": args} }
	runDateCases(t, []dtCase{
		{"no zone", fs(codec.Document{"dateString": "2017-02-08T12:10:40.787"}), nil, dtDate(t, "2017-02-08T12:10:40.787Z")},
		{"New York", fs(codec.Document{"dateString": "2017-02-08T12:10:40.787", "timezone": "America/New_York"}), nil, dtDate(t, "2017-02-08T17:10:40.787Z")},
		{"date only", fs(codec.Document{"dateString": "2017-02-08"}), nil, dtDate(t, "2017-02-08")},
		{"%m-%d-%Y", fs(codec.Document{"dateString": "06-15-2018", "format": "%m-%d-%Y"}), nil, dtDate(t, "2018-06-15")},
		{"%d-%m-%Y", fs(codec.Document{"dateString": "15-06-2018", "format": "%d-%m-%Y"}), nil, dtDate(t, "2018-06-15")},
	})
	logs := []codec.Document{
		{"_id": 1, "date": "2017-02-08T12:10:40.787", "timezone": "America/New_York"},
		{"_id": 2, "date": "2017-02-08", "timezone": "-05:00"},
		{"_id": 3},
		{"_id": 4, "date": "2017-02-09", "timezone": "Europe/London"},
		{"_id": 5, "date": "2017-02-09T03:35:02.055", "timezone": "+0530"},
	}
	wantNY := []any{dtDate(t, "2017-02-08T17:10:40.787Z"), dtDate(t, "2017-02-08T05:00:00Z"), nil, dtDate(t, "2017-02-09T05:00:00Z"), dtDate(t, "2017-02-09T08:35:02.055Z")}
	wantOwn := []any{dtDate(t, "2017-02-08T17:10:40.787Z"), dtDate(t, "2017-02-08T05:00:00Z"), nil, dtDate(t, "2017-02-09T00:00:00Z"), dtDate(t, "2017-02-08T22:05:02.055Z")}
	for i, doc := range logs {
		got, err := dtEval(t, fs(codec.Document{"dateString": "$date", "timezone": "America/New_York"}), doc)
		require.NoError(t, err)
		assert.Equal(t, wantNY[i], got, "logmessages %d, New York", i+1)
		got, err = dtEval(t, fs(codec.Document{"dateString": "$date", "timezone": "$timezone"}), doc)
		require.NoError(t, err)
		assert.Equal(t, wantOwn[i], got, "logmessages %d, own zone", i+1)
	}
	onError := fs(codec.Document{"dateString": "$date", "timezone": "$timezone", "onError": "$date"})
	onNull := fs(codec.Document{"dateString": "$date", "timezone": "$timezone", "onNull": time.Unix(0, 0).UTC()})
	runDateCases(t, []dtCase{
		{"onError parses", onError, codec.Document{"date": "2017-02-08T12:10:40.787", "timezone": "America/New_York"}, dtDate(t, "2017-02-08T17:10:40.787Z")},
		{"onError", onError, codec.Document{"date": "20177-02-09T03:35:02.055", "timezone": "America/New_York"}, "20177-02-09T03:35:02.055"},
		{"onNull", onNull, codec.Document{"date": nil, "timezone": "America/New_York"}, time.Unix(0, 0).UTC()},
		{"onError for a number", fs(codec.Document{"dateString": 5, "onError": "bad"}), nil, "bad"},
		{"Z suffix", fs(codec.Document{"dateString": "2017-02-08T12:10:40.787Z"}), nil, dtDate(t, "2017-02-08T12:10:40.787Z")},
		{"offset suffix", fs(codec.Document{"dateString": "2017-02-08T12:10:40-05:00"}), nil, dtDate(t, "2017-02-08T17:10:40Z")},
		{"offset suffix hhmm", fs(codec.Document{"dateString": "2017-02-08T12:10+0530"}), nil, dtDate(t, "2017-02-08T06:40:00Z")},
		{"UTC suffix", fs(codec.Document{"dateString": "2017-07-08 12:10:40 UTC"}), nil, dtDate(t, "2017-07-08T12:10:40Z")},
		{"Z with a UTC timezone", fs(codec.Document{"dateString": "2017-02-08T12:10:40Z", "timezone": "UTC"}), nil, dtDate(t, "2017-02-08T12:10:40Z")},
		{"offset with a zero-offset timezone", fs(codec.Document{"dateString": "2017-02-08T12:10:40+01:00", "timezone": "+00:00"}), nil, dtDate(t, "2017-02-08T11:10:40Z")},
		{"format: time defaults to midnight", fs(codec.Document{"dateString": "2017 8 2", "format": "%Y %d %m"}), nil, dtDate(t, "2017-02-08")},
		{"format: minutes without seconds", fs(codec.Document{"dateString": "2017-02-08 7:05", "format": "%Y-%m-%d %H:%M"}), nil, dtDate(t, "2017-02-08T07:05:00Z")},
		{"written date", fs(codec.Document{"dateString": "July 4th, 2017"}), nil, dtDate(t, "2017-07-04")},
		{"written date with a time", fs(codec.Document{"dateString": "Jul 4 2017 12:39:30", "timezone": "America/New_York"}), nil, dtDate(t, "2017-07-04T16:39:30Z")},
		{"day first", fs(codec.Document{"dateString": "4 july 2017 12:39"}), nil, dtDate(t, "2017-07-04T12:39:00Z")},
		{"Sept.", fs(codec.Document{"dateString": "Sept. 1st, 2017"}), nil, dtDate(t, "2017-09-01")},
		{"offset after a space", fs(codec.Document{"dateString": "2017-07-06T12:35:37.000 +0000"}), nil, dtDate(t, "2017-07-06T12:35:37Z")},
		{"space separator", fs(codec.Document{"dateString": "2017-02-08 12:10:40"}), nil, dtDate(t, "2017-02-08T12:10:40Z")},
		{"fraction beyond milliseconds", fs(codec.Document{"dateString": "2017-02-08T12:10:40.7879"}), nil, dtDate(t, "2017-02-08T12:10:40.787Z")},
		{"format with %z", fs(codec.Document{"dateString": "2017/02/08 12h10 +0100", "format": "%Y/%m/%d %Hh%M %z"}), nil, dtDate(t, "2017-02-08T11:10:00Z")},
		{"format with %Z", fs(codec.Document{"dateString": "08.02.2017 -300", "format": "%d.%m.%Y %Z"}), nil, dtDate(t, "2017-02-08T05:00:00Z")},
		{"format with %j", fs(codec.Document{"dateString": "2016-366", "format": "%Y-%j"}), nil, dtDate(t, "2016-12-31")},
		{"format with ISO week", fs(codec.Document{"dateString": "2015-W53-5", "format": "%G-W%V-%u"}), nil, dtDate(t, "2016-01-01")},
		{"format with month names", fs(codec.Document{"dateString": "8 feb 2017 / FEBRUARY", "format": "%d %b %Y / %B"}), nil, dtDate(t, "2017-02-08")},
		{"format with %L and %%", fs(codec.Document{"dateString": "2017-02-08 12:10:40.5%", "format": "%Y-%m-%d %H:%M:%S.%L%%"}), nil, dtDate(t, "2017-02-08T12:10:40.5Z")},
		{"DST gap in New York moves forward", fs(codec.Document{"dateString": "2021-03-14T02:30:00", "timezone": "America/New_York"}), nil, dtDate(t, "2021-03-14T07:30:00Z")},
		{"null format", fs(codec.Document{"dateString": "2017-02-08", "format": nil}), nil, nil},
		{"null timezone", fs(codec.Document{"dateString": "2017-02-08", "timezone": "$nope"}), nil, nil},
	})
	runDateErrors(t, []dtErrCase{
		{"unknown month", fs(codec.Document{"dateString": "Julember 4, 2017"}), nil, false},
		{"written date without a year", fs(codec.Document{"dateString": "July 4th"}), nil, false},
		{"empty", fs(codec.Document{"dateString": ""}), nil, false},
		{"five-digit year", fs(codec.Document{"dateString": "20177-02-09T03:35:02.055"}), nil, false},
		{"February 30", fs(codec.Document{"dateString": "2017-02-30"}), nil, false},
		{"hour 24", fs(codec.Document{"dateString": "2017-02-08T24:00"}), nil, false},
		{"trailing text", fs(codec.Document{"dateString": "2017-02-08Tnoon"}), nil, false},
		{"zone twice", fs(codec.Document{"dateString": "2017-02-08T12:10:40Z", "timezone": "America/New_York"}), nil, false},
		{"offset and GMT", fs(codec.Document{"dateString": "2017-02-08T12:10:40+01:00", "timezone": "GMT"}), nil, false},
		{"zone name in the string", fs(codec.Document{"dateString": "2017-07-08 12:10:40 America/New_York"}), nil, false},
		{"format without a date", fs(codec.Document{"dateString": "12:10", "format": "%H:%M"}), nil, false},
		{"format without a day", fs(codec.Document{"dateString": "2017-02", "format": "%Y-%m"}), nil, false},
		{"ISO week without a week", fs(codec.Document{"dateString": "2017-3", "format": "%G-%u"}), nil, false},
		{"not a string", fs(codec.Document{"dateString": 5}), nil, false},
		{"format mismatch", fs(codec.Document{"dateString": "2017-02-08", "format": "%d/%m/%Y"}), nil, false},
		{"bad format", fs(codec.Document{"dateString": "2017", "format": "%Y%q"}), nil, true},
		{"unknown argument", fs(codec.Document{"dateString": "2017", "fmt": "%Y"}), nil, true},
		{"bad zone with onError", fs(codec.Document{"dateString": "2017-02-08", "timezone": "Nowhere", "onError": 1}), nil, false},
	})
}

// TestManual_dateFromParts reproduces the manual's examples (the sales
// aggregation, and month values above and below their range).
func TestManual_dateFromParts(t *testing.T) {
	fp := func(args codec.Document) codec.Document { return codec.Document{"$dateFromParts": args} }
	runDateCases(t, []dtCase{
		{"date", fp(codec.Document{"year": 2017, "month": 2, "day": 8, "hour": 12}), nil, dtDate(t, "2017-02-08T12:00:00Z")},
		{"date_iso", fp(codec.Document{"isoWeekYear": 2017, "isoWeek": 6, "isoDayOfWeek": 3, "hour": 12}), nil, dtDate(t, "2017-02-08T12:00:00Z")},
		{"date_timezone", fp(codec.Document{"year": 2016, "month": 12, "day": 31, "hour": 23, "minute": 46, "second": 12, "timezone": "America/New_York"}), nil, dtDate(t, "2017-01-01T04:46:12Z")},
		{"month 14", fp(codec.Document{"year": 2017, "month": 14, "day": 1, "hour": 12}), nil, dtDate(t, "2018-02-01T12:00:00Z")},
		{"month 0", fp(codec.Document{"year": 2017, "month": 0, "day": 1, "hour": 12}), nil, dtDate(t, "2016-12-01T12:00:00Z")},
		{"defaults", fp(codec.Document{"year": 2020}), nil, dtDate(t, "2020-01-01")},
		{"iso defaults", fp(codec.Document{"isoWeekYear": 2016}), nil, dtDate(t, "2016-01-04")},
		{"iso week 53", fp(codec.Document{"isoWeekYear": 2015, "isoWeek": 53, "isoDayOfWeek": 5}), nil, dtDate(t, "2016-01-01")},
		{"milliseconds carry", fp(codec.Document{"year": 2017, "second": 59, "millisecond": 1500}), nil, dtDate(t, "2017-01-01T00:01:00.5Z")},
		{"negative hour", fp(codec.Document{"year": 2017, "month": 3, "hour": -1}), nil, dtDate(t, "2017-02-28T23:00:00Z")},
		{"whole doubles and decimals", fp(codec.Document{"year": 2017.0, "month": dtDecimal(t, "3")}), nil, dtDate(t, "2017-03-01")},
		{"offset zone", fp(codec.Document{"year": 2017, "hour": 12, "timezone": "+04:45"}), nil, dtDate(t, "2017-01-01T07:15:00Z")},
		{"null part", fp(codec.Document{"year": 2017, "month": nil}), nil, nil},
		{"missing part", fp(codec.Document{"year": "$nope"}), nil, nil},
		{"null timezone", fp(codec.Document{"year": 2017, "timezone": nil}), nil, nil},
	})
	runDateErrors(t, []dtErrCase{
		{"year 0", fp(codec.Document{"year": 0}), nil, false},
		{"year 10000", fp(codec.Document{"year": 10000}), nil, false},
		{"month 32768", fp(codec.Document{"year": 2017, "month": 32768}), nil, false},
		{"fractional", fp(codec.Document{"year": 2017, "day": 1.5}), nil, false},
		{"string", fp(codec.Document{"year": "2017"}), nil, false},
		{"mixed forms", fp(codec.Document{"year": 2017, "isoWeek": 3}), nil, true},
		{"no year", fp(codec.Document{"month": 3}), nil, true},
		{"iso without isoWeekYear", fp(codec.Document{"isoWeek": 3}), nil, true},
		{"unknown argument", fp(codec.Document{"year": 2017, "days": 3}), nil, true},
		{"not a document", codec.Document{"$dateFromParts": "$$NOW"}, nil, true},
		{"bad zone", fp(codec.Document{"year": 2017, "timezone": "Nowhere/Else"}), nil, false},
	})
}

// TestManual_dateToParts reproduces the manual's example.
func TestManual_dateToParts(t *testing.T) {
	doc := codec.Document{"_id": 2, "date": dtDate(t, "2017-01-01T01:29:09.123Z")}
	runDateCases(t, []dtCase{
		{"date", codec.Document{"$dateToParts": codec.Document{"date": "$date"}}, doc, codec.Document{
			"year": int32(2017), "month": int32(1), "day": int32(1), "hour": int32(1), "minute": int32(29), "second": int32(9), "millisecond": int32(123)}},
		{"date_iso", codec.Document{"$dateToParts": codec.Document{"date": "$date", "iso8601": true}}, doc, codec.Document{
			"isoWeekYear": int32(2016), "isoWeek": int32(52), "isoDayOfWeek": int32(7), "hour": int32(1), "minute": int32(29), "second": int32(9), "millisecond": int32(123)}},
		{"date_timezone", codec.Document{"$dateToParts": codec.Document{"date": "$date", "timezone": "America/New_York"}}, doc, codec.Document{
			"year": int32(2016), "month": int32(12), "day": int32(31), "hour": int32(20), "minute": int32(29), "second": int32(9), "millisecond": int32(123)}},
		{"null date", codec.Document{"$dateToParts": codec.Document{"date": "$nope"}}, doc, nil},
		{"null iso8601", codec.Document{"$dateToParts": codec.Document{"date": "$date", "iso8601": nil}}, doc, nil},
	})
	// $dateFromParts inverts $dateToParts, in a zone too.
	for _, tz := range []string{"UTC", "America/New_York", "-0530"} {
		parts, err := dtEval(t, codec.Document{"$dateToParts": codec.Document{"date": "$date", "timezone": tz}}, doc)
		require.NoError(t, err)
		args := parts.(codec.Document)
		args["timezone"] = tz
		back, err := dtEval(t, codec.Document{"$dateFromParts": args}, nil)
		require.NoError(t, err)
		assert.Equal(t, doc["date"], back, tz)
	}
	runDateErrors(t, []dtErrCase{
		{"iso8601 not a bool", codec.Document{"$dateToParts": codec.Document{"date": "$$NOW", "iso8601": 1}}, nil, false},
		{"not a date", codec.Document{"$dateToParts": codec.Document{"date": 1}}, nil, false},
		{"no date", codec.Document{"$dateToParts": codec.Document{}}, nil, true},
	})
}

// FuzzDateFromString: any date string, with any format and zone, gives
// a date in range, null or an error wrapping ErrExpression or
// ErrInvalidOptions; and a date formatted with the default format
// parses back to itself.
func FuzzDateFromString(f *testing.F) {
	f.Add("2017-02-08T12:10:40.787", "", "")
	f.Add("July 4th, 2017 12:00", "", "America/New_York")
	f.Add("06-15-2018", "%m-%d-%Y", "-0530")
	f.Add("2015-W53-5 +0100", "%G-W%V-%u %z", "")
	f.Add("366 2016 %", "%j %Y %%", "+03")
	f.Fuzz(func(t *testing.T, s, format, tz string) {
		args := codec.Document{"dateString": s}
		if format != "" {
			args["format"] = format
		}
		if tz != "" {
			args["timezone"] = tz
		}
		e, err := CompileExpr(codec.Document{"$dateFromString": args})
		if err != nil {
			if !errors.Is(err, errs.ErrInvalidOptions) {
				t.Fatalf("compile error %v", err)
			}
			return
		}
		v, err := e.Evaluate(&Env{})
		if err != nil {
			if !errors.Is(err, errs.ErrExpression) {
				t.Fatalf("evaluation error %v", err)
			}
			return
		}
		if v == nil {
			return // a format or zone of "$..." is a path to a missing field
		}
		d, ok := v.(time.Time)
		if !ok {
			t.Fatalf("%q: %v is not a date", s, v)
		}
		if d.Before(minBSONDate) || d.After(maxBSONDate) || d.Nanosecond()%1e6 != 0 {
			t.Fatalf("%q: %v is not a BSON date", s, d)
		}
		if d.Year() < 0 || d.Year() > 9999 {
			return
		}
		str, err := dtEval(t, codec.Document{"$dateToString": codec.Document{"date": d}}, nil)
		if err != nil {
			t.Fatalf("format %v: %v", d, err)
		}
		back, err := dtEval(t, codec.Document{"$dateFromString": codec.Document{"dateString": str}}, nil)
		if err != nil || !back.(time.Time).Equal(d) {
			t.Fatalf("%v formats as %v, which parses as %v, %v", d, str, back, err)
		}
	})
}
