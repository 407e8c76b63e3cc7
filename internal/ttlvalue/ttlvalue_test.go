package ttlvalue

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/ttldb/ttldb/internal/codec"
)

// utc builds a UTC instant for the expectations below.
func utc(y int, mo time.Month, d, h, mi, s, ns int) time.Time {
	return time.Date(y, mo, d, h, mi, s, ns, time.UTC)
}

// isoMin and isoMax are the range ParseISODate returns, computed by the
// time package independently of isoMinUnix and isoMaxUnix.
var (
	isoMin = utc(0, time.January, 1, 0, 0, 0, 0)
	isoMax = utc(9999, time.December, 31, 23, 59, 59, 999999999)
)

func TestISORangeConstants(t *testing.T) {
	assert.Equal(t, isoMin.Unix(), int64(isoMinUnix))
	assert.Equal(t, isoMax.Unix(), int64(isoMaxUnix))
}

// TestDaysSinceEpoch checks the first and last day of every month of years
// 0000–9999 against the time package, and that daysIn gives that last day.
func TestDaysSinceEpoch(t *testing.T) {
	for y := 0; y <= 9999; y++ {
		for m := time.January; m <= time.December; m++ {
			last := daysIn(m, y)
			if utc(y, m, last, 0, 0, 0, 0).Month() != m || utc(y, m, last+1, 0, 0, 0, 0).Month() == m {
				require.Fail(t, "wrong month length", "%04d-%02d: daysIn = %d", y, m, last)
			}
			for _, d := range []int{1, last} {
				want := utc(y, m, d, 0, 0, 0, 0).Unix() / secondsPerDay
				if got := daysSinceEpoch(y, m, d); got != want {
					require.Equal(t, want, got, "%04d-%02d-%02d", y, m, d)
				}
			}
		}
	}
}

// isoDateCases are the ParseISODate acceptance table: want is the UTC
// instant for accepted strings, ok=false for rejected ones.
var isoDateCases = []struct {
	in   string
	ok   bool
	want time.Time
	why  string
}{
	// Reference 003's six examples, exactly.
	{"2019-05-27", true, utc(2019, 5, 27, 0, 0, 0, 0), "date only is midnight UTC"},
	{"2019-05-27T21:20:00", true, utc(2019, 5, 27, 21, 20, 0, 0), "no offset is UTC"},
	{"2019-05-27T21:20:00Z", true, utc(2019, 5, 27, 21, 20, 0, 0), "Z"},
	{"2019-05-27T21:20:00.123Z", true, utc(2019, 5, 27, 21, 20, 0, 123e6), "milliseconds"},
	{"2019-05-27T21:20:00.123+01:30", true, utc(2019, 5, 27, 19, 50, 0, 123e6), "positive offset"},
	{"2019-05-27T21:20:00.123-02:00", true, utc(2019, 5, 27, 23, 20, 0, 123e6), "negative offset"},
	// Reference 003's other examples.
	{"2019-02-14T17:39:33.000Z", true, utc(2019, 2, 14, 17, 39, 33, 0), "zero milliseconds"},
	{"2019-03-28T01:06:00Z", true, utc(2019, 3, 28, 1, 6, 0, 0), "expireDate example"},
	// Extensions.
	{"2019-05-27T21:20:00+01:30", true, utc(2019, 5, 27, 19, 50, 0, 0), "offset without fraction"},
	{"2019-05-27T21:20:00.1Z", true, utc(2019, 5, 27, 21, 20, 0, 100e6), "1-digit fraction"},
	{"2019-05-27T21:20:00.123456789Z", true, utc(2019, 5, 27, 21, 20, 0, 123456789), "9-digit fraction"},
	{"2019-05-27T21:20:00.000000001", true, utc(2019, 5, 27, 21, 20, 0, 1), "one nanosecond, no offset"},
	{"2019-05-27T21:20:00-00:00", true, utc(2019, 5, 27, 21, 20, 0, 0), "-00:00 is UTC"},
	{"2019-05-27T23:30:00-01:00", true, utc(2019, 5, 28, 0, 30, 0, 0), "offset moves to the next day"},
	{"2019-01-01T00:30:00+01:00", true, utc(2018, 12, 31, 23, 30, 0, 0), "offset moves to the previous year"},
	{"2019-05-27T00:00:00+23:59", true, utc(2019, 5, 26, 0, 1, 0, 0), "largest offset"},
	{"2020-02-29", true, utc(2020, 2, 29, 0, 0, 0, 0), "leap year"},
	{"2000-02-29T12:00:00Z", true, utc(2000, 2, 29, 12, 0, 0, 0), "leap year divisible by 400"},
	{"2019-04-30", true, utc(2019, 4, 30, 0, 0, 0, 0), "last day of a 30-day month"},
	{"2019-12-31T23:59:59Z", true, utc(2019, 12, 31, 23, 59, 59, 0), "last second of a year"},
	{"1969-12-31T23:59:59Z", true, utc(1969, 12, 31, 23, 59, 59, 0), "before 1970"},
	{"1969-12-31T23:59:59.999999999Z", true, utc(1969, 12, 31, 23, 59, 59, 999999999), "a nanosecond before 1970"},
	{"1970-01-01T00:00:00Z", true, utc(1970, 1, 1, 0, 0, 0, 0), "the epoch"},
	{"1970-01-01T00:30:00+01:00", true, utc(1969, 12, 31, 23, 30, 0, 0), "before 1970 by its offset"},
	{"0000-01-01", true, utc(0, 1, 1, 0, 0, 0, 0), "earliest instant"},
	{"0000-02-29", true, utc(0, 2, 29, 0, 0, 0, 0), "year 0 is a leap year"},
	{"9999-12-31T23:59:59.999999999Z", true, utc(9999, 12, 31, 23, 59, 59, 999999999), "latest instant"},
	{"9999-12-31T23:59:59+01:00", true, utc(9999, 12, 31, 22, 59, 59, 0), "offset back inside the range"},

	{"", false, time.Time{}, "empty"},
	{" ", false, time.Time{}, "space"},
	{" 2019-05-27", false, time.Time{}, "leading space"},
	{"2019-05-27 ", false, time.Time{}, "trailing space"},
	{"2019-05-27T21:20:00Z ", false, time.Time{}, "trailing space after Z"},
	{"2019-13-01", false, time.Time{}, "month 13"},
	{"2019-00-10", false, time.Time{}, "month 0"},
	{"2019-05-32", false, time.Time{}, "day 32"},
	{"2019-05-00", false, time.Time{}, "day 0"},
	{"2019-04-31", false, time.Time{}, "April 31"},
	{"2019-02-30", false, time.Time{}, "Feb 30"},
	{"2019-02-29", false, time.Time{}, "Feb 29 in a non-leap year"},
	{"1900-02-29", false, time.Time{}, "Feb 29 in a century non-leap year"},
	{"2019-05-27T24:00:00", false, time.Time{}, "hour 24"},
	{"2019-05-27T21:60:00", false, time.Time{}, "minute 60"},
	{"2019-05-27T21:20:60Z", false, time.Time{}, "leap second"},
	{"2019-05-27T21:20:00+0130", false, time.Time{}, "offset without colon"},
	{"2019-05-27T21:20:00+01", false, time.Time{}, "offset without minutes"},
	{"2019-05-27T21:20:00+1:30", false, time.Time{}, "1-digit offset hour"},
	{"2019-05-27T21:20:00+24:00", false, time.Time{}, "offset hour 24"},
	{"2019-05-27T21:20:00+01:60", false, time.Time{}, "offset minute 60"},
	{"2019-05-27T21:20:00.123+01:30:00", false, time.Time{}, "offset with seconds"},
	{"2019-05-27T21:20:00Z+01:00", false, time.Time{}, "Z and offset"},
	{"2019-05-27T21:20:00Zjunk", false, time.Time{}, "trailing text"},
	{"2019-05-27T21:20:00 Z", false, time.Time{}, "space before Z"},
	{"2019/05/27", false, time.Time{}, "slashes"},
	{"20190527", false, time.Time{}, "basic format"},
	{"19-05-27", false, time.Time{}, "2-digit year"},
	{"02019-05-27", false, time.Time{}, "5-digit year"},
	{"+2019-05-27", false, time.Time{}, "sign on the year"},
	{"-2019-05-27", false, time.Time{}, "negative year"},
	{"2019-5-27", false, time.Time{}, "1-digit month"},
	{"2019-05-7", false, time.Time{}, "1-digit day"},
	{"2019-0a-27", false, time.Time{}, "letter in the month"},
	{"２019-05-27", false, time.Time{}, "non-ASCII digit"},
	{"2019-05-27T", false, time.Time{}, "T with no time"},
	{"2019-05-27T21", false, time.Time{}, "hour only"},
	{"2019-05-27T21:20", false, time.Time{}, "no seconds"},
	{"2019-05-27T2l:20:00", false, time.Time{}, "letter in the hour"},
	{"2019-05-27T-1:20:00", false, time.Time{}, "negative hour"},
	{"2019-05-27T21-20-00", false, time.Time{}, "dashes in the time"},
	{"2019-05-27 21:20:00", false, time.Time{}, "space instead of T"},
	{"2019-05-27t21:20:00", false, time.Time{}, "lower-case t"},
	{"2019-05-27T21:20:00z", false, time.Time{}, "lower-case z"},
	{"2019-05-27Z", false, time.Time{}, "Z after a bare date"},
	{"2019-05-27+01:00", false, time.Time{}, "offset after a bare date"},
	{"2019-05-27T21:20:00.", false, time.Time{}, "dot without digits"},
	{"2019-05-27T21:20:00.Z", false, time.Time{}, "dot without digits before Z"},
	{"2019-05-27T21:20:00.1234567890Z", false, time.Time{}, "10-digit fraction"},
	{"2019-05-27T21:20:00,123Z", false, time.Time{}, "comma fraction"},
	{"2019-05-27T21:20:00.12aZ", false, time.Time{}, "letter in the fraction"},
	{"0000-01-01T00:00:00+00:01", false, time.Time{}, "instant before year 0"},
	{"9999-12-31T23:59:59-00:01", false, time.Time{}, "instant after year 9999"},
	{"2019-05-27T21:20:00.123+01:30" + strings.Repeat("0", 100), false, time.Time{}, "long"},
}

func TestParseISODate(t *testing.T) {
	require.GreaterOrEqual(t, len(isoDateCases), 40)
	for _, c := range isoDateCases {
		t.Run(c.why, func(t *testing.T) {
			got, ok := ParseISODate(c.in)
			require.Equal(t, c.ok, ok, "ParseISODate(%q)", c.in)
			if !ok {
				assert.True(t, got.IsZero(), "a rejected string yields the zero time")
				return
			}
			assert.True(t, c.want.Equal(got), "ParseISODate(%q) = %v, want %v", c.in, got, c.want)
			assert.Equal(t, time.UTC, got.Location())
		})
	}
}

// TestISODateTTLEpoch runs the parser table through a TTL index's reading
// in ArangoDB's forms: a string the parser accepts is a date exactly when
// its instant is at or after 1970-01-01T00:00:00Z (ArangoDB turns it into
// Unix seconds and never indexes a negative timestamp); a time.Time of the
// same instant is a date whatever its year, as in MongoDB.
func TestISODateTTLEpoch(t *testing.T) {
	epoch := time.Unix(0, 0)
	before := 0
	for _, c := range isoDateCases {
		t.Run(c.why, func(t *testing.T) {
			got, ok := Date([]any{c.in}, DatesAndArango)
			wantOK := c.ok && !c.want.Before(epoch)
			require.Equal(t, wantOK, ok, "Date(%q)", c.in)
			if ok {
				assert.True(t, c.want.Equal(got))
			}
			if c.ok {
				asTime, ok := Date([]any{c.want}, DatesAndArango)
				require.True(t, ok, "a time.Time is always a date")
				assert.True(t, c.want.Equal(asTime))
			}
		})
		if c.ok && c.want.Before(epoch) {
			before++
		}
	}
	require.GreaterOrEqual(t, before, 5, "the table holds strings before 1970")
}

func TestFormatISODate(t *testing.T) {
	cases := []struct {
		in   time.Time
		want string
	}{
		{utc(2019, 5, 27, 19, 50, 0, 123e6), "2019-05-27T19:50:00.123Z"},
		{utc(2019, 5, 27, 19, 50, 0, 0), "2019-05-27T19:50:00Z"},
		{utc(2019, 5, 27, 19, 50, 0, 1), "2019-05-27T19:50:00.000000001Z"},
		{time.Date(2019, 5, 27, 21, 20, 0, 0, time.FixedZone("", 90*60)), "2019-05-27T19:50:00Z"},
		{utc(0, 1, 1, 0, 0, 0, 0), "0000-01-01T00:00:00Z"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, FormatISODate(c.in))
	}
}

// TestFormatISODateRoundTrip checks ParseISODate(FormatISODate(t)) == t over
// random instants of the whole range, as the fuzz target does over parsed
// strings.
func TestFormatISODateRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lo, hi := int64(isoMinUnix), int64(isoMaxUnix)
	for range 10000 {
		in := time.Unix(lo+r.Int64N(hi-lo+1), r.Int64N(1e9)).UTC()
		got, ok := ParseISODate(FormatISODate(in))
		require.True(t, ok, FormatISODate(in))
		require.True(t, in.Equal(got), "%s: got %v", FormatISODate(in), got)
	}
	for _, in := range []time.Time{isoMin, isoMax} {
		got, ok := ParseISODate(FormatISODate(in))
		require.True(t, ok)
		require.True(t, in.Equal(got))
	}
}

func FuzzParseISODate(f *testing.F) {
	for _, c := range isoDateCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseISODate(s)
		if !ok {
			require.True(t, got.IsZero())
			return
		}
		// The shape of an accepted string.
		require.GreaterOrEqual(t, len(s), isoDateLen)
		require.LessOrEqual(t, len(s), isoMaxLen)
		require.Equal(t, "--", string([]byte{s[4], s[7]}))
		if len(s) > isoDateLen {
			require.GreaterOrEqual(t, len(s), isoDateTimeLen)
			require.Equal(t, "T::", string([]byte{s[10], s[13], s[16]}))
		}
		require.Equal(t, time.UTC, got.Location())
		require.False(t, got.Before(isoMin) || got.After(isoMax))

		// The canonical form round-trips and is a fixed point.
		canon := FormatISODate(got)
		back, ok := ParseISODate(canon)
		require.True(t, ok, "canonical form %q of %q rejected", canon, s)
		require.True(t, got.Equal(back), "%q -> %v -> %q -> %v", s, got, canon, back)
		require.Equal(t, canon, FormatISODate(back))

		// An independent oracle: time.Parse agrees on every accepted string.
		rfc := s
		switch {
		case len(s) == isoDateLen:
			rfc += "T00:00:00Z"
		case !strings.HasSuffix(s, "Z") && !strings.ContainsAny(s[isoDateTimeLen:], "+-"):
			rfc += "Z"
		}
		want, err := time.Parse(time.RFC3339Nano, rfc)
		require.NoError(t, err, "time.Parse(%q)", rfc)
		require.True(t, want.Equal(got), "%q: time.Parse says %v, ParseISODate %v", s, want, got)
	})
}

func TestUnixSecondsDate(t *testing.T) {
	ref := utc(2019, 2, 14, 17, 39, 33, 0) // reference 003: 1550165973
	min100 := utc(1970, 1, 1, 0, 1, 40, 0)
	accepted := []struct {
		in   any
		want time.Time
	}{
		{int(100), min100},
		{int8(100), min100},
		{int16(100), min100},
		{int32(100), min100},
		{int64(100), min100},
		{uint(100), min100},
		{uint8(100), min100},
		{uint16(100), min100},
		{uint32(100), min100},
		{uint64(100), min100},
		{float32(100), min100},
		{float64(100), min100},
		{int(1550165973), ref},
		{int64(1550165973), ref},
		{uint32(1550165973), ref},
		{uint64(1550165973), ref},
		{float64(1550165973), ref},
		{1550165973.5, ref.Add(500 * time.Millisecond)},
		{0.25, utc(1970, 1, 1, 0, 0, 0, 250e6)},
		{0.1, utc(1970, 1, 1, 0, 0, 0, 100e6)},
		{1e-9, utc(1970, 1, 1, 0, 0, 0, 1)},
		{0.9999999999, utc(1970, 1, 1, 0, 0, 1, 0)}, // rounds up into the next second
		{float32(1.5), utc(1970, 1, 1, 0, 0, 1, 500e6)},
		{0, time.Unix(0, 0)},
		{math.Copysign(0, -1), time.Unix(0, 0)},
		{int64(maxUnixSeconds), time.Unix(maxUnixSeconds, 0)},
		{uint64(maxUnixSeconds), time.Unix(maxUnixSeconds, 0)},
		{float64(maxUnixSeconds), time.Unix(maxUnixSeconds, 0)},
	}
	for _, c := range accepted {
		got, ok := unixSecondsDate(c.in)
		require.True(t, ok, "%T(%v)", c.in, c.in)
		assert.True(t, c.want.Equal(got), "%T(%v): got %v, want %v", c.in, c.in, got, c.want)
		assert.Equal(t, time.UTC, got.Location())
	}

	rejected := []any{
		-1, int8(-1), int16(-1), int32(-1), int64(math.MinInt64), float32(-1), -0.5, -1e-300,
		math.NaN(), float32(math.NaN()), math.Inf(1), math.Inf(-1), float32(math.Inf(1)),
		int64(maxUnixSeconds + 1), int64(math.MaxInt64), uint64(math.MaxUint64), uint64(maxUnixSeconds + 1),
		math.Nextafter(maxUnixSeconds, math.Inf(1)), math.MaxFloat64,
		nil, "1550165973", true, time.Unix(5, 0), []int{1}, codec.ObjectID{},
	}
	for _, v := range rejected {
		got, ok := unixSecondsDate(v)
		assert.False(t, ok, "%T(%v)", v, v)
		assert.True(t, got.IsZero())
	}
}

func TestUnixSecondsDateFractionPrecision(t *testing.T) {
	// 1550165973.123 is not exact as a float64; the fraction is kept as
	// precisely as the float allows (its spacing there is about 0.24 µs).
	got, ok := unixSecondsDate(1550165973.123)
	require.True(t, ok)
	diff := got.Sub(utc(2019, 2, 14, 17, 39, 33, 123e6))
	assert.Less(t, diff.Abs(), 300*time.Nanosecond)
}

func TestUnixSecondsDateMilliseconds(t *testing.T) {
	// No unit guessing: milliseconds are read as seconds, far in the future.
	got, ok := unixSecondsDate(int64(1550165973000))
	require.True(t, ok)
	assert.Greater(t, got.Year(), 50000)
	assert.Equal(t, 51092, got.Year())
}

func TestTTLValueFormsString(t *testing.T) {
	assert.Equal(t, "DatesAndArango", DatesAndArango.String())
	assert.Equal(t, "DatesOnly", DatesOnly.String())
	assert.Equal(t, "TTLValueForms(7)", Forms(7).String())
	assert.Equal(t, DatesAndArango, Forms(0), "the default is the zero value")
}

func TestTTLDate(t *testing.T) {
	t1950 := utc(1950, 6, 1, 0, 0, 0, 0)
	t2018 := utc(2018, 1, 1, 0, 0, 0, 0)
	t2019 := utc(2019, 2, 14, 17, 39, 33, 0) // = 1550165973 = "2019-02-14T17:39:33Z"
	t2020 := utc(2020, 1, 1, 0, 0, 0, 0)
	t9000 := utc(9000, 1, 1, 0, 0, 0, 0)
	berlin := time.FixedZone("CET", 3600)

	both := []Forms{DatesAndArango, DatesOnly}
	arango := []Forms{DatesAndArango}
	strict := []Forms{DatesOnly, Forms(7)}

	cases := []struct {
		name  string
		vals  []any
		forms []Forms
		ok    bool
		want  time.Time
	}{
		{"single date", []any{t2019}, both, true, t2019},
		{"date in another zone", []any{t2019.In(berlin)}, both, true, t2019},
		{"pre-1970 date", []any{t1950}, both, true, t1950},
		{"year 9000", []any{t9000}, both, true, t9000},
		{"zero time.Time is year 1", []any{time.Time{}}, both, true, time.Time{}},
		{"missing: nil vals", nil, both, false, time.Time{}},
		{"missing: empty vals", []any{}, both, false, time.Time{}},
		{"nil", []any{nil}, both, false, time.Time{}},
		{"bool", []any{true}, both, false, time.Time{}},
		{"document, even holding a date", []any{map[string]any{"d": t2019}}, both, false, time.Time{}},
		{"binary", []any{[]byte("2019-05-27")}, both, false, time.Time{}},
		{"ObjectID", []any{codec.NewObjectIDFromTime(t2019)}, both, false, time.Time{}},
		{"unparseable string", []any{"yesterday"}, both, false, time.Time{}},
		{"negative number", []any{-5}, both, false, time.Time{}},
		{"NaN", []any{math.NaN()}, both, false, time.Time{}},
		{"+Inf", []any{math.Inf(1)}, both, false, time.Time{}},
		{"empty array", []any{[]any{}}, both, false, time.Time{}},
		{"array of junk", []any{[]any{nil, true, "x", map[string]any{}}}, both, false, time.Time{}},
		{"[]time.Time takes the earliest", []any{[]time.Time{t2020, t1950, t9000}}, both, true, t1950},
		{"[]any mixing dates and junk", []any{[]any{"junk", t2020, nil, t2018, true, map[string]any{"a": t1950}}}, both, true, t2018},
		{"several values (path through an array)", []any{t2020, t2018, t9000}, both, true, t2018},
		{"array and scalar values", []any{[]time.Time{t2020}, t2018}, both, true, t2018},
		{"nested arrays are not expanded", []any{[]any{[]any{t1950}, t2020}}, both, true, t2020},
		{"nested typed array is not expanded", []any{[]any{[]time.Time{t1950}}}, both, false, time.Time{}},
		{"equal instants in two zones", []any{[]any{t2019.In(berlin), t2019}}, both, true, t2019},

		{"number", []any{1550165973}, arango, true, t2019},
		{"float number", []any{1550165973.5}, arango, true, t2019.Add(500 * time.Millisecond)},
		{"ISO string", []any{"2019-02-14T17:39:33Z"}, arango, true, t2019},
		{"ISO string with offset", []any{"2019-02-14T18:39:33+01:00"}, arango, true, t2019},
		{"mixed kinds take the earliest", []any{[]any{t2020, 1550165973, "2018-01-01", "junk", -1}}, arango, true, t2018},
		{"typed number array", []any{[]int64{1577836800, 1550165973}}, arango, true, t2019},
		{"typed string array", []any{[]string{"junk", "2020-01-01", "2018-01-01T00:00:00Z"}}, arango, true, t2018},
		{"millisecond number loses to year 9000", []any{[]any{int64(1550165973000), t9000}}, arango, true, t9000},
		{"ISO string before 1970 is not a date", []any{"1950-06-01"}, arango, false, time.Time{}},
		{"ISO string a nanosecond before 1970", []any{"1969-12-31T23:59:59.999999999Z"}, arango, false, time.Time{}},
		{"ISO string at the epoch", []any{"1970-01-01T00:00:00Z"}, arango, true, time.Unix(0, 0)},
		{"ISO string before 1970 loses to a later one", []any{[]any{"1950-06-01", "2018-01-01"}}, arango, true, t2018},
		{"time.Time before 1970 is a date, a string is not", []any{[]any{"1949-01-01", t1950, t2020}}, arango, true, t1950},

		{"strict: number ignored", []any{1550165973}, strict, false, time.Time{}},
		{"strict: string ignored", []any{"2019-02-14T17:39:33Z"}, strict, false, time.Time{}},
		{"strict: mixed keeps only dates", []any{[]any{"2018-01-01", 0, t2020}}, strict, true, t2020},
		{"strict: typed string array ignored", []any{[]string{"2018-01-01"}}, strict, false, time.Time{}},
		{"strict: typed number array ignored", []any{[]float64{0}}, strict, false, time.Time{}},
	}
	for _, c := range cases {
		for _, forms := range c.forms {
			t.Run(c.name+"/"+forms.String(), func(t *testing.T) {
				got, ok := Date(c.vals, forms)
				require.Equal(t, c.ok, ok)
				if !ok {
					assert.True(t, got.IsZero())
					return
				}
				assert.True(t, c.want.Equal(got), "got %v, want %v", got, c.want)
				assert.Equal(t, time.UTC, got.Location())
			})
		}
	}
}

func TestTTLDateFromPathValues(t *testing.T) {
	early, late := utc(2018, 1, 1, 0, 0, 0, 0), utc(2020, 1, 1, 0, 0, 0, 0)
	doc := map[string]any{"events": []any{map[string]any{"at": late}, map[string]any{"at": early}, map[string]any{"other": 1}}}
	vals, found := codec.PathValues(doc, "events.at")
	require.True(t, found)
	got, ok := Date(vals, DatesOnly)
	require.True(t, ok)
	assert.True(t, early.Equal(got))
}

func TestTTLDateAndParseDoNotAllocate(t *testing.T) {
	date := utc(2019, 2, 14, 17, 39, 33, 0)
	cases := map[string][]any{
		"time":        {date},
		"[]time.Time": {[]time.Time{date, date.Add(-time.Hour)}},
		"[]any":       {[]any{date, "2019-05-27T21:20:00.123+01:30", 1550165973.5, nil}},
		"string":      {"2019-05-27T21:20:00.123+01:30"},
		"number":      {int64(1550165973)},
	}
	for name, vals := range cases {
		allocs := testing.AllocsPerRun(100, func() { _, _ = Date(vals, DatesAndArango) })
		assert.Zero(t, allocs, name)
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = ParseISODate("2019-05-27T21:20:00.123-02:00") })
	assert.Zero(t, allocs, "ParseISODate")
}

// sinkTime keeps benchmark results alive.
var sinkTime time.Time

func BenchmarkTTLDate(b *testing.B) {
	date := utc(2019, 2, 14, 17, 39, 33, 0)
	cases := []struct {
		name string
		vals []any
	}{
		{"time", []any{date}},
		{"[]time.Time", []any{[]time.Time{date, date.Add(-time.Hour), date.Add(time.Hour)}}},
		{"string", []any{"2019-05-27T21:20:00.123+01:30"}},
		{"number", []any{1550165973.5}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkTime, _ = Date(c.vals, DatesAndArango)
			}
		})
	}
}

func BenchmarkParseISODate(b *testing.B) {
	for _, s := range []string{"2019-05-27", "2019-05-27T21:20:00.123+01:30"} {
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkTime, _ = ParseISODate(s)
			}
		})
	}
}
