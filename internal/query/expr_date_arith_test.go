package query

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/codec"
	"github.com/ttldb/ttldb/internal/errs"
)

func dtAdd(op string, start any, unit string, amount any, tz any) codec.Document {
	args := codec.Document{"startDate": start, "unit": unit, "amount": amount}
	if tz != nil {
		args["timezone"] = tz
	}
	return codec.Document{op: args}
}

// TestManual_dateAdd reproduces the manual's examples: the last day of
// the month, the shipping collection (3 days later; deliveries more than
// 5 days after purchase), and the billing collection across New York's
// spring-forward (a day keeps the wall clock, 24 hours do not).
func TestManual_dateAdd(t *testing.T) {
	runDateCases(t, []dtCase{
		{"last day of the month", dtAdd("$dateAdd", dtDate(t, "2020-10-31T12:10:05Z"), "month", 1, nil), nil, dtDate(t, "2020-11-30T12:10:05Z")},
		{"shipping 456", dtAdd("$dateAdd", "$purchaseDate", "day", 3, nil), codec.Document{"purchaseDate": dtDate(t, "2020-12-31")}, dtDate(t, "2021-01-03")},
		{"shipping 457", dtAdd("$dateAdd", "$purchaseDate", "day", 3, nil), codec.Document{"purchaseDate": dtDate(t, "2021-02-28")}, dtDate(t, "2021-03-03")},
		{"shipping 458", dtAdd("$dateAdd", "$purchaseDate", "day", 3, nil), codec.Document{"purchaseDate": dtDate(t, "2021-02-26")}, dtDate(t, "2021-03-01")},
	})
	// The billing table, each cell formatted as the manual shows it.
	type row struct{ location, login, start, startTZ, days, daysTZ, hours, hoursTZ string }
	for _, r := range []row{
		{"America/New_York", "2021-03-13T15:00:00Z", "2021-03-13 15:00", "2021-03-13 10:00", "2021-03-14 14:00", "2021-03-14 10:00", "2021-03-14 15:00", "2021-03-14 11:00"},
		{"America/Mexico_City", "2021-03-13T10:00:00Z", "2021-03-13 10:00", "2021-03-13 04:00", "2021-03-14 10:00", "2021-03-14 04:00", "2021-03-14 10:00", "2021-03-14 04:00"},
	} {
		doc := codec.Document{"location": r.location, "login": dtDate(t, r.login)}
		format := func(date any, tz bool) codec.Document {
			args := codec.Document{"format": "%Y-%m-%d %H:%M", "date": date}
			if tz {
				args["timezone"] = "$location"
			}
			return codec.Document{"$dateToString": args}
		}
		days := dtAdd("$dateAdd", "$login", "day", 1, "$location")
		hours := dtAdd("$dateAdd", "$login", "hour", 24, "$location")
		for name, c := range map[string]struct {
			expr any
			want string
		}{
			"start": {format("$login", false), r.start}, "startTZInfo": {format("$login", true), r.startTZ},
			"days": {format(days, false), r.days}, "daysTZInfo": {format(days, true), r.daysTZ},
			"hours": {format(hours, false), r.hours}, "hoursTZInfo": {format(hours, true), r.hoursTZ},
		} {
			got, err := dtEval(t, c.expr, doc)
			require.NoError(t, err)
			assert.Equal(t, c.want, got, "%s %s", r.location, name)
		}
	}
}

// TestManual_dateSubtract reproduces the manual's examples: 3 hours off
// January's logouts, and the billing table for New York.
func TestManual_dateSubtract(t *testing.T) {
	runDateCases(t, []dtCase{
		{"logout 457", dtAdd("$dateSubtract", "$logout", "hour", 3, nil), codec.Document{"logout": dtDate(t, "2021-01-28T13:05:00Z")}, dtDate(t, "2021-01-28T10:05:00Z")},
		{"logout 458", dtAdd("$dateSubtract", "$logout", "hour", 3, nil), codec.Document{"logout": dtDate(t, "2021-01-31T11:00:00Z")}, dtDate(t, "2021-01-31T08:00:00Z")},
		{"New York 1 day", dtAdd("$dateSubtract", dtDate(t, "2021-03-14T15:00:00Z"), "day", 1, "America/New_York"), nil, dtDate(t, "2021-03-13T16:00:00Z")},
		{"New York 24 hours", dtAdd("$dateSubtract", dtDate(t, "2021-03-14T15:00:00Z"), "hour", 24, "America/New_York"), nil, dtDate(t, "2021-03-13T15:00:00Z")},
		{"a week before $$NOW", dtAdd("$dateSubtract", "$$NOW", "week", 1, nil), nil, time.Time{}.AddDate(0, 0, -7)},
	})
}

// TestDateAdd covers the units, the month clamp, zones and DST, the
// inputs, null, and the bounds.
func TestDateAdd(t *testing.T) {
	d := dtDate(t, "2021-01-31T10:20:30.456Z")
	add := func(unit string, amount any) codec.Document { return dtAdd("$dateAdd", d, unit, amount, nil) }
	runDateCases(t, []dtCase{
		{"year", add("year", 1), nil, dtDate(t, "2022-01-31T10:20:30.456Z")},
		{"quarter", add("quarter", 1), nil, dtDate(t, "2021-04-30T10:20:30.456Z")},
		{"month clamps to February 28", add("month", 1), nil, dtDate(t, "2021-02-28T10:20:30.456Z")},
		{"month clamps to February 29", dtAdd("$dateAdd", dtDate(t, "2020-01-31"), "month", 1, nil), nil, dtDate(t, "2020-02-29")},
		{"leap day plus a year", dtAdd("$dateAdd", dtDate(t, "2020-02-29"), "year", 1, nil), nil, dtDate(t, "2021-02-28")},
		{"negative months", add("month", -13), nil, dtDate(t, "2019-12-31T10:20:30.456Z")},
		{"week", add("week", 2), nil, dtDate(t, "2021-02-14T10:20:30.456Z")},
		{"day", add("day", -31), nil, dtDate(t, "2020-12-31T10:20:30.456Z")},
		{"hour", add("hour", 25), nil, dtDate(t, "2021-02-01T11:20:30.456Z")},
		{"minute", add("minute", 40), nil, dtDate(t, "2021-01-31T11:00:30.456Z")},
		{"second", add("second", -31), nil, dtDate(t, "2021-01-31T10:19:59.456Z")},
		{"millisecond", add("millisecond", 544), nil, dtDate(t, "2021-01-31T10:20:31Z")},
		{"double amount", add("day", 1.0), nil, dtDate(t, "2021-02-01T10:20:30.456Z")},
		{"decimal amount", add("day", dtDecimal(t, "1")), nil, dtDate(t, "2021-02-01T10:20:30.456Z")},
		{"month in a zone clamps on the local date", dtAdd("$dateAdd", dtDate(t, "2021-02-01T03:00:00Z"), "month", 1, "America/New_York"), nil, dtDate(t, "2021-03-01T03:00:00Z")},
		{"New York fall back: a day keeps the wall clock", dtAdd("$dateAdd", dtDate(t, "2021-11-06T16:00:00Z"), "day", 1, "America/New_York"), nil, dtDate(t, "2021-11-07T17:00:00Z")},
		{"New York fall back: hours are elapsed", dtAdd("$dateAdd", dtDate(t, "2020-11-01T05:50:02Z"), "hour", 1, "America/New_York"), nil, dtDate(t, "2020-11-01T06:50:02Z")},
		{"New York: a day into the gap moves forward", dtAdd("$dateAdd", dtDate(t, "2021-03-13T07:30:00Z"), "day", 1, "America/New_York"), nil, dtDate(t, "2021-03-14T07:30:00Z")},
		{"offset zone", dtAdd("$dateAdd", dtDate(t, "2021-01-31T22:00:00Z"), "month", 1, "+03"), nil, dtDate(t, "2021-02-28T22:00:00Z")},
		{"ObjectID", dtAdd("$dateAdd", "$_id", "day", 1, nil), codec.Document{"_id": bson.NewObjectIDFromTimestamp(dtDate(t, "2020-05-18T14:10:30Z"))}, dtDate(t, "2020-05-19T14:10:30Z")},
		{"timestamp", dtAdd("$dateAdd", bson.Timestamp{T: 1500000000}, "second", 1, nil), nil, dtDate(t, "2017-07-14T02:40:01Z")},
		{"null amount", add("day", nil), nil, nil},
		{"missing start", dtAdd("$dateAdd", "$nope", "day", 1, nil), nil, nil},
		{"null unit", dtAdd("$dateAdd", d, "$nope", 1, nil), nil, nil},
		{"null timezone", dtAdd("$dateAdd", d, "day", 1, "$nope"), nil, nil},
		{"subtract", dtAdd("$dateSubtract", dtDate(t, "2020-03-31"), "month", 1, nil), nil, dtDate(t, "2020-02-29")},
	})
	runDateErrors(t, []dtErrCase{
		{"fractional amount", add("day", 1.5), nil, false},
		{"string amount", add("day", "1"), nil, false},
		{"unknown unit", add("fortnight", 1), nil, false},
		{"unit not a string", dtAdd("$dateAdd", d, "$n", 1, nil), codec.Document{"n": 1}, false},
		{"not a date", dtAdd("$dateAdd", "2021-01-01", "day", 1, nil), nil, false},
		{"bad zone", dtAdd("$dateAdd", d, "day", 1, "Nowhere"), nil, false},
		{"amount beyond any date", add("year", int64(1)<<40), nil, false},
		{"result beyond any date", add("year", 300_000_000), nil, false},
		{"milliseconds overflow", dtAdd("$dateAdd", time.UnixMilli(math.MaxInt64-5).UTC(), "millisecond", 10, nil), nil, false},
		{"huge double", add("day", 1e300), nil, false},
		{"subtract MinInt64", dtAdd("$dateSubtract", d, "millisecond", int64(math.MinInt64), nil), nil, false},
		{"missing amount", codec.Document{"$dateAdd": codec.Document{"startDate": d, "unit": "day"}}, nil, true},
		{"unknown argument", codec.Document{"$dateAdd": codec.Document{"startDate": d, "unit": "day", "amount": 1, "tz": "UTC"}}, nil, true},
	})
}

func dtDiff(start, end any, unit string, extra codec.Document) codec.Document {
	args := codec.Document{"startDate": start, "endDate": end, "unit": unit}
	for k, v := range extra {
		args[k] = v
	}
	return codec.Document{"$dateDiff": args}
}

// TestManual_dateDiff reproduces the manual's examples: the orders'
// days, the subscriptions' years/months/days, and the weeks per month
// with three starts of the week.
func TestManual_dateDiff(t *testing.T) {
	var total int64
	for _, o := range [][2]string{{"2020-12-31", "2021-01-05"}, {"2021-02-28", "2021-03-07"}, {"2021-02-16", "2021-02-18"}} {
		got, err := dtEval(t, dtDiff("$purchased", "$delivered", "day", nil), codec.Document{"purchased": dtDate(t, o[0]), "delivered": dtDate(t, o[1])})
		require.NoError(t, err)
		total += got.(int64)
	}
	assert.Equal(t, 4.6, math.Trunc(float64(total)/3*10)/10, "numDays")
	for _, s := range []struct {
		start, end          string
		years, months, days int64
	}{
		{"2010-01-01", "2011-01-01", 1, 12, 365},
		{"2010-01-01", "2011-07-01", 1, 18, 546}, // the manual's "2011-06-31" is July 1st
		{"2010-03-01", "2010-04-30", 0, 1, 60},
	} {
		doc := codec.Document{"start": dtDate(t, s.start), "end": dtDate(t, s.end)}
		for unit, want := range map[string]int64{"year": s.years, "month": s.months, "day": s.days} {
			got, err := dtEval(t, dtDiff("$start", "$end", unit, nil), doc)
			require.NoError(t, err)
			assert.Equal(t, want, got, "%s to %s in %ss", s.start, s.end, unit)
		}
	}
	for _, m := range []struct {
		start, end             string
		sunday, monday, friday int64
	}{
		{"2021-01-01", "2021-01-31", 5, 4, 4},
		{"2021-02-01", "2021-02-28", 4, 3, 4},
		{"2021-03-01", "2021-03-31", 4, 4, 4},
	} {
		doc := codec.Document{"start": dtDate(t, m.start), "end": dtDate(t, m.end)}
		for _, c := range []struct {
			sow  any
			want int64
		}{{nil, m.sunday}, {"Monday", m.monday}, {"fri", m.friday}} {
			extra := codec.Document{}
			if c.sow != nil {
				extra["startOfWeek"] = c.sow
			}
			got, err := dtEval(t, dtDiff("$start", "$end", "week", extra), doc)
			require.NoError(t, err)
			assert.Equal(t, c.want, got, "weeks from %s, start of week %v", m.start, c.sow)
		}
	}
}

// TestDateDiff covers boundaries counted (not elapsed time), zones and
// DST, negative differences, null, and errors.
func TestDateDiff(t *testing.T) {
	ny := codec.Document{"timezone": "America/New_York"}
	runDateCases(t, []dtCase{
		{"one millisecond crosses a year", dtDiff(dtDate(t, "2020-12-31T23:59:59.999Z"), dtDate(t, "2021-01-01T00:00:00Z"), "year", nil), nil, int64(1)},
		{"almost a year crosses none", dtDiff(dtDate(t, "2021-01-01"), dtDate(t, "2021-12-31T23:59:59Z"), "year", nil), nil, int64(0)},
		{"quarters", dtDiff(dtDate(t, "2021-03-31"), dtDate(t, "2022-04-01"), "quarter", nil), nil, int64(5)},
		{"negative months", dtDiff(dtDate(t, "2021-03-01"), dtDate(t, "2021-01-31"), "month", nil), nil, int64(-2)},
		{"negative weeks", dtDiff(dtDate(t, "2021-01-31"), dtDate(t, "2021-01-01"), "week", nil), nil, int64(-5)},
		{"hours", dtDiff(dtDate(t, "2021-01-01T10:59:00Z"), dtDate(t, "2021-01-01T11:00:00Z"), "hour", nil), nil, int64(1)},
		{"minutes", dtDiff(dtDate(t, "2021-01-01T10:59:59Z"), dtDate(t, "2021-01-01T11:00:00Z"), "minute", nil), nil, int64(1)},
		{"seconds", dtDiff(dtDate(t, "2021-01-01T10:59:59.999Z"), dtDate(t, "2021-01-01T11:00:00Z"), "second", nil), nil, int64(1)},
		{"milliseconds", dtDiff(dtDate(t, "2021-01-01T11:00:00.5Z"), dtDate(t, "2021-01-01T11:00:00Z"), "millisecond", nil), nil, int64(-500)},
		{"day in UTC", dtDiff(dtDate(t, "2021-01-01T03:00:00Z"), dtDate(t, "2021-01-01T06:00:00Z"), "day", nil), nil, int64(0)},
		{"day in New York crosses midnight", dtDiff(dtDate(t, "2021-01-01T03:00:00Z"), dtDate(t, "2021-01-01T06:00:00Z"), "day", ny), nil, int64(1)},
		{"year in New York", dtDiff(dtDate(t, "2021-01-01T03:00:00Z"), dtDate(t, "2021-01-01T06:00:00Z"), "year", ny), nil, int64(1)},
		{"New York fall back: 01:30 EDT to 01:30 EST is an hour", dtDiff(dtDate(t, "2021-11-07T05:30:00Z"), dtDate(t, "2021-11-07T06:30:00Z"), "hour", ny), nil, int64(1)},
		{"New York fall back: 60 minutes", dtDiff(dtDate(t, "2021-11-07T05:30:00Z"), dtDate(t, "2021-11-07T06:30:00Z"), "minute", ny), nil, int64(60)},
		{"New York fall back: same day", dtDiff(dtDate(t, "2021-11-07T05:30:00Z"), dtDate(t, "2021-11-07T06:30:00Z"), "day", ny), nil, int64(0)},
		{"New York spring forward: 01:59 to 03:00 is a minute", dtDiff(dtDate(t, "2021-03-14T06:59:00Z"), dtDate(t, "2021-03-14T07:00:00Z"), "minute", ny), nil, int64(1)},
		{"New York spring forward: an hour boundary", dtDiff(dtDate(t, "2021-03-14T06:59:00Z"), dtDate(t, "2021-03-14T07:00:00Z"), "hour", ny), nil, int64(1)},
		{"half-hour zone: hours count its boundaries", dtDiff(dtDate(t, "2021-01-01T10:20:00Z"), dtDate(t, "2021-01-01T10:40:00Z"), "hour", codec.Document{"timezone": "+05:30"}), nil, int64(1)},
		{"startOfWeek ignored for days", dtDiff(dtDate(t, "2021-01-01"), dtDate(t, "2021-01-02"), "day", codec.Document{"startOfWeek": "nonsense"}), nil, int64(1)},
		{"startOfWeek null", dtDiff(dtDate(t, "2021-01-01"), dtDate(t, "2021-01-31"), "week", codec.Document{"startOfWeek": nil}), nil, nil},
		{"ObjectID and timestamp", dtDiff("$_id", bson.Timestamp{T: uint32(dtDate(t, "2020-05-19T14:10:30Z").Unix())}, "hour", nil),
			codec.Document{"_id": bson.NewObjectIDFromTimestamp(dtDate(t, "2020-05-18T14:10:30Z"))}, int64(24)},
		{"null end", dtDiff(dtDate(t, "2021-01-01"), nil, "day", nil), nil, nil},
		{"missing start", dtDiff("$nope", dtDate(t, "2021-01-01"), "day", nil), nil, nil},
		{"null timezone", dtDiff(dtDate(t, "2021-01-01"), dtDate(t, "2021-01-01"), "day", codec.Document{"timezone": nil}), nil, nil},
		{"extreme milliseconds", dtDiff(time.UnixMilli(-(1 << 61)).UTC(), time.UnixMilli(1<<61).UTC(), "millisecond", nil), nil, int64(1) << 62},
	})
	runDateErrors(t, []dtErrCase{
		{"unknown unit", dtDiff(dtDate(t, "2021-01-01"), dtDate(t, "2021-01-01"), "decade", nil), nil, false},
		{"bad startOfWeek", dtDiff(dtDate(t, "2021-01-01"), dtDate(t, "2021-01-01"), "week", codec.Document{"startOfWeek": "someday"}), nil, false},
		{"startOfWeek a number", dtDiff(dtDate(t, "2021-01-01"), dtDate(t, "2021-01-01"), "week", codec.Document{"startOfWeek": 1}), nil, false},
		{"not a date", dtDiff("2021", dtDate(t, "2021-01-01"), "day", nil), nil, false},
		{"milliseconds overflow", dtDiff(time.UnixMilli(math.MinInt64).UTC(), time.UnixMilli(math.MaxInt64).UTC(), "millisecond", nil), nil, false},
		{"missing unit", codec.Document{"$dateDiff": codec.Document{"startDate": "$$NOW", "endDate": "$$NOW"}}, nil, true},
	})
}

func dtTrunc(date any, unit string, extra codec.Document) codec.Document {
	args := codec.Document{"date": date, "unit": unit}
	for k, v := range extra {
		args[k] = v
	}
	return codec.Document{"$dateTrunc": args}
}

// TestManual_dateTrunc reproduces the manual's examples: the hour bins
// of the binSize explanation, the cakeSales orders truncated to two
// weeks starting Monday in Los Angeles, and to six months.
func TestManual_dateTrunc(t *testing.T) {
	d := dtDate(t, "2021-03-20T11:30:05Z")
	runDateCases(t, []dtCase{
		{"1 hour", dtTrunc(d, "hour", nil), nil, dtDate(t, "2021-03-20T11:00:00Z")},
		{"2 hours", dtTrunc(d, "hour", codec.Document{"binSize": 2}), nil, dtDate(t, "2021-03-20T10:00:00Z")},
	})
	orders := []struct{ date, twoWeeks, sixMonths string }{
		{"2020-05-18T14:10:30Z", "2020-05-11T07:00:00Z", "2020-01-01T00:00:00Z"},
		{"2021-03-20T11:30:05Z", "2021-03-15T07:00:00Z", "2021-01-01T00:00:00Z"},
		{"2021-01-11T06:31:15Z", "2021-01-04T08:00:00Z", "2021-01-01T00:00:00Z"},
		{"2020-02-08T13:13:23Z", "2020-02-03T08:00:00Z", "2020-01-01T00:00:00Z"},
		{"2019-05-18T16:09:01Z", "2019-05-13T07:00:00Z", "2019-01-01T00:00:00Z"},
		{"2019-01-08T06:12:03Z", "2019-01-07T08:00:00Z", "2019-01-01T00:00:00Z"},
	}
	twoWeeks := dtTrunc("$orderDate", "week", codec.Document{"binSize": 2, "timezone": "America/Los_Angeles", "startOfWeek": "Monday"})
	sixMonths := dtTrunc("$orderDate", "month", codec.Document{"binSize": 6})
	for i, o := range orders {
		doc := codec.Document{"_id": i, "orderDate": dtDate(t, o.date)}
		got, err := dtEval(t, twoWeeks, doc)
		require.NoError(t, err)
		assert.Equal(t, dtDate(t, o.twoWeeks), got, "order %d, two weeks", i)
		got, err = dtEval(t, sixMonths, doc)
		require.NoError(t, err)
		assert.Equal(t, dtDate(t, o.sixMonths), got, "order %d, six months", i)
	}
}

// TestDateTrunc covers each unit, bins counted from 2000-01-01, zones
// and DST, null, and errors.
func TestDateTrunc(t *testing.T) {
	d := dtDate(t, "2021-08-19T17:45:31.789Z") // a Thursday
	ny := codec.Document{"timezone": "America/New_York"}
	runDateCases(t, []dtCase{
		{"year", dtTrunc(d, "year", nil), nil, dtDate(t, "2021-01-01")},
		{"10 years from 2000", dtTrunc(d, "year", codec.Document{"binSize": 10}), nil, dtDate(t, "2020-01-01")},
		{"10 years before 2000", dtTrunc(dtDate(t, "1985-06-01"), "year", codec.Document{"binSize": 10}), nil, dtDate(t, "1980-01-01")},
		{"quarter", dtTrunc(d, "quarter", nil), nil, dtDate(t, "2021-07-01")},
		{"month", dtTrunc(d, "month", nil), nil, dtDate(t, "2021-08-01")},
		{"week from Sunday", dtTrunc(d, "week", nil), nil, dtDate(t, "2021-08-15")},
		{"week from Monday", dtTrunc(d, "week", codec.Document{"startOfWeek": "MON"}), nil, dtDate(t, "2021-08-16")},
		{"week from Friday", dtTrunc(d, "week", codec.Document{"startOfWeek": "friday"}), nil, dtDate(t, "2021-08-13")},
		{"day", dtTrunc(d, "day", nil), nil, dtDate(t, "2021-08-19")},
		{"day in New York (EDT)", dtTrunc(d, "day", ny), nil, dtDate(t, "2021-08-19T04:00:00Z")},
		{"day in New York before midnight UTC", dtTrunc(dtDate(t, "2021-01-02T03:00:00Z"), "day", ny), nil, dtDate(t, "2021-01-01T05:00:00Z")},
		{"day in New York on the spring-forward day", dtTrunc(dtDate(t, "2021-03-14T20:00:00Z"), "day", ny), nil, dtDate(t, "2021-03-14T05:00:00Z")},
		{"day in New York on the fall-back day", dtTrunc(dtDate(t, "2021-11-07T20:00:00Z"), "day", ny), nil, dtDate(t, "2021-11-07T04:00:00Z")},
		{"month in New York", dtTrunc(d, "month", ny), nil, dtDate(t, "2021-08-01T04:00:00Z")},
		{"hour", dtTrunc(d, "hour", nil), nil, dtDate(t, "2021-08-19T17:00:00Z")},
		{"hour in a half-hour zone", dtTrunc(d, "hour", codec.Document{"timezone": "+05:30"}), nil, dtDate(t, "2021-08-19T17:30:00Z")},
		{"15 minutes", dtTrunc(d, "minute", codec.Document{"binSize": 15}), nil, dtDate(t, "2021-08-19T17:45:00Z")},
		{"second", dtTrunc(d, "second", nil), nil, dtDate(t, "2021-08-19T17:45:31Z")},
		{"100 milliseconds", dtTrunc(d, "millisecond", codec.Document{"binSize": 100}), nil, dtDate(t, "2021-08-19T17:45:31.7Z")},
		{"hours before 2000", dtTrunc(dtDate(t, "1969-12-31T23:30:00Z"), "hour", codec.Document{"binSize": 5}), nil, dtDate(t, "1969-12-31T22:00:00Z")}, // 262970 hours (a multiple of 5) before 2000,
		{"binSize a whole double", dtTrunc(d, "month", codec.Document{"binSize": 3.0}), nil, dtDate(t, "2021-07-01")},
		{"ObjectID", dtTrunc("$_id", "day", nil), codec.Document{"_id": bson.NewObjectIDFromTimestamp(d)}, dtDate(t, "2021-08-19")},
		{"startOfWeek null with week", dtTrunc(d, "week", codec.Document{"startOfWeek": nil}), nil, nil},
		{"startOfWeek ignored without week", dtTrunc(d, "day", codec.Document{"startOfWeek": "nonsense"}), nil, dtDate(t, "2021-08-19")},
		{"null date", dtTrunc(nil, "day", nil), nil, nil},
		{"null unit", dtTrunc(d, "$nope", nil), nil, nil},
		{"null binSize", dtTrunc(d, "day", codec.Document{"binSize": nil}), nil, nil},
		{"null timezone", dtTrunc(d, "day", codec.Document{"timezone": nil}), nil, nil},
	})
	runDateErrors(t, []dtErrCase{
		{"binSize 0", dtTrunc(d, "day", codec.Document{"binSize": 0}), nil, false},
		{"binSize negative", dtTrunc(d, "day", codec.Document{"binSize": -1}), nil, false},
		{"binSize fractional", dtTrunc(d, "day", codec.Document{"binSize": 1.5}), nil, false},
		{"binSize too large for days", dtTrunc(d, "day", codec.Document{"binSize": int64(1e12)}), nil, false},
		{"binSize too large for hours", dtTrunc(d, "hour", codec.Document{"binSize": int64(math.MaxInt64 / 1000)}), nil, false},
		{"unknown unit", dtTrunc(d, "fortnight", nil), nil, false},
		{"bad startOfWeek", dtTrunc(d, "week", codec.Document{"startOfWeek": "funday"}), nil, false},
		{"not a date", dtTrunc("today", "day", nil), nil, false},
		{"missing unit", codec.Document{"$dateTrunc": codec.Document{"date": d}}, nil, true},
	})
}

// TestDateArithmeticAtTheBounds: amounts and bins at and past their
// bounds, and dates at the ends of the range, give a date or an error,
// never a panic or a wrapped-around date.
func TestDateArithmeticAtTheBounds(t *testing.T) {
	ends := []time.Time{minBSONDate, maxBSONDate, time.Unix(0, 0).UTC()}
	for _, d := range ends {
		for unit, max := range maxAddAmount {
			for _, amount := range []int64{max - 1, -(max - 1), max, -max, 1, -1} {
				for _, tz := range []any{nil, "America/New_York", "+05:30"} {
					got, err := dtEval(t, dtAdd("$dateAdd", d, unitName(unit), amount, tz), nil)
					if err != nil {
						assert.True(t, errors.Is(err, errs.ErrExpression), "%v", err)
						continue
					}
					r := got.(time.Time)
					assert.False(t, r.Before(minBSONDate) || r.After(maxBSONDate), "%v + %d %s = %v", d, amount, unitName(unit), r)
					if amount > 0 {
						assert.False(t, r.Before(d), "%v + %d %s = %v", d, amount, unitName(unit), r)
					}
				}
			}
		}
		for _, unit := range []string{"millisecond", "second", "hour", "day", "week", "month", "year"} {
			for _, bin := range []int64{1, 7, maxTruncBins, math.MaxInt64 / 3_600_000} {
				got, err := dtEval(t, dtTrunc(d, unit, codec.Document{"binSize": bin, "timezone": "America/New_York"}), nil)
				if err != nil {
					assert.True(t, errors.Is(err, errs.ErrExpression), "%v", err)
					continue
				}
				assert.False(t, got.(time.Time).After(d), "trunc %v to %d %s = %v", d, bin, unit, got)
			}
		}
		for _, unit := range []string{"millisecond", "second", "minute", "hour", "day", "week", "month", "quarter", "year"} {
			for _, other := range ends {
				_, err := dtEval(t, dtDiff(d, other, unit, codec.Document{"timezone": "Asia/Kolkata"}), nil)
				if err != nil {
					assert.True(t, errors.Is(err, errs.ErrExpression), "%v", err)
				}
			}
		}
	}
}
