package query

import (
	"math"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zone names work where the system has no zoneinfo files

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/ttldb/ttldb/internal/codec"
)

// Date operators: the parts of a date ($year ... $isoDayOfWeek),
// $dateToParts, $dateFromParts, $dateAdd, $dateSubtract, $dateDiff and
// $dateTrunc. $dateToString and $dateFromString are in expr_datefmt.go.
//
// Dates are read in a time zone (the timezone argument: an Olson name or
// a UTC offset; UTC when absent), as MongoDB does: a date part, a
// truncation or a count of days is that of the local wall clock.

func init() {
	ops := map[string]opCompiler{
		"$dateToParts":    compileDateToParts,
		"$dateFromParts":  compileDateFromParts,
		"$dateAdd":        compileDateAdd,
		"$dateSubtract":   compileDateAdd,
		"$dateDiff":       compileDateDiff,
		"$dateTrunc":      compileDateTrunc,
		"$dateToString":   compileDateToString,
		"$dateFromString": compileDateFromString,
	}
	for name, part := range dateParts {
		ops[name] = compileDatePart(part)
	}
	registerOps(ops)
}

// dateParts are the operators that read one part of a date, given the
// date in its time zone.
var dateParts = map[string]func(t time.Time) any{
	"$year":        func(t time.Time) any { return int32(t.Year()) },
	"$month":       func(t time.Time) any { return int32(t.Month()) },
	"$dayOfMonth":  func(t time.Time) any { return int32(t.Day()) },
	"$hour":        func(t time.Time) any { return int32(t.Hour()) },
	"$minute":      func(t time.Time) any { return int32(t.Minute()) },
	"$second":      func(t time.Time) any { return int32(t.Second()) },
	"$millisecond": func(t time.Time) any { return int32(t.Nanosecond() / 1e6) },
	"$dayOfWeek":   func(t time.Time) any { return int32(t.Weekday()) + 1 },
	"$dayOfYear":   func(t time.Time) any { return int32(t.YearDay()) },
	"$week":        func(t time.Time) any { return int32(sundayWeek(t)) },
	"$isoWeek": func(t time.Time) any {
		_, w := t.ISOWeek()
		return int32(w)
	},
	"$isoWeekYear": func(t time.Time) any {
		y, _ := t.ISOWeek()
		return int64(y)
	},
	"$isoDayOfWeek": func(t time.Time) any { return int32(isoWeekday(t)) },
}

// sundayWeek is the week of the year as strftime's %U counts it: weeks
// start on Sunday, and the days before the year's first Sunday are in
// week 0.
func sundayWeek(t time.Time) int {
	return (t.YearDay() - 1 + 7 - int(t.Weekday())) / 7
}

// isoWeekday is 1 for Monday ... 7 for Sunday.
func isoWeekday(t time.Time) int {
	if t.Weekday() == time.Sunday {
		return 7
	}
	return int(t.Weekday())
}

// datePartNode is one of dateParts: its date, and its timezone (nil:
// UTC).
type datePartNode struct {
	op       string
	date, tz node
	part     func(time.Time) any
}

// compileDatePart compiles {$year: <date>}, {$year: [<date>]} and
// {$year: {date: <date>, timezone: <tz>}}.
func compileDatePart(part func(time.Time) any) opCompiler {
	return func(c *compiler, op string, arg any) (node, error) {
		n := &datePartNode{op: op, part: part}
		if m, ok := codec.AsDocument(arg); ok && !isOperatorDocument(m) {
			args, err := c.namedOperands(op, arg, []string{"date"}, []string{"timezone"})
			if err != nil {
				return nil, err
			}
			n.date, n.tz = args["date"], args["timezone"]
			return n, nil
		}
		args, err := c.operands(op, arg, 1, 1)
		if err != nil {
			return nil, err
		}
		n.date = args[0]
		return n, nil
	}
}

// isOperatorDocument reports whether m is an expression ({$op: ...})
// rather than a document of named arguments.
func isOperatorDocument(m map[string]any) bool {
	for k := range m {
		if strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

func (n *datePartNode) eval(env *Env) (any, error) {
	loc, null, err := evalZone(n.op, env, n.tz)
	if err != nil || null {
		return nil, err
	}
	v, err := n.date.eval(env)
	if err != nil || nullish(v) {
		return nil, err
	}
	t, err := toDate(n.op, v)
	if err != nil {
		return nil, err
	}
	return n.part(t.In(loc)), nil
}

// toDate reads a date argument: a date, or the time of an ObjectID or
// of a timestamp (its seconds).
func toDate(op string, v any) (time.Time, error) {
	switch x := v.(type) {
	case time.Time:
		return x.UTC(), nil
	case codec.ObjectID:
		return x.Timestamp().UTC(), nil
	case bson.Timestamp:
		return time.Unix(int64(x.T), 0).UTC(), nil
	}
	return time.Time{}, evalErr(op, "can't convert from BSON type %s to Date", TypeName(v))
}

// evalZone evaluates a timezone argument: UTC when absent (n == nil),
// null when it is null or missing (the operator's result is then null).
func evalZone(op string, env *Env, n node) (loc *time.Location, null bool, err error) {
	if n == nil {
		return time.UTC, false, nil
	}
	v, err := n.eval(env)
	if err != nil {
		return nil, false, err
	}
	if nullish(v) {
		return nil, true, nil
	}
	loc, err = parseZone(op, v)
	return loc, false, err
}

// zoneCache holds the zones loaded by name. Only names the time zone
// database knows are stored: it stays as small as that database.
var zoneCache sync.Map // string → *time.Location

// parseZone reads a time zone: an Olson name ("America/New_York",
// "GMT") or a UTC offset ("+04:45", "-0530", "+03").
func parseZone(op string, v any) (*time.Location, error) {
	s, ok := v.(string)
	if !ok {
		return nil, evalErr(op, "timezone must be a string, not %s", TypeName(v))
	}
	if s != "" && (s[0] == '+' || s[0] == '-') {
		secs, ok := parseOffset(s[1:], true)
		if !ok {
			return nil, evalErr(op, "unrecognized time zone identifier: %q", s)
		}
		if s[0] == '-' {
			secs = -secs
		}
		return time.FixedZone(s, secs), nil
	}
	if s == "Z" {
		return time.UTC, nil
	}
	if l, ok := zoneCache.Load(s); ok {
		return l.(*time.Location), nil
	}
	if !zoneNameOK(s) {
		return nil, evalErr(op, "unrecognized time zone identifier: %q", s)
	}
	loc, err := time.LoadLocation(s)
	if err != nil {
		return nil, evalErr(op, "unrecognized time zone identifier: %q", s)
	}
	zoneCache.Store(s, loc)
	return loc, nil
}

// zoneNameOK accepts what can be a zone database name (letters first,
// then letters, digits, '/', '_', '+', '-'), and refuses "Local", which
// is the machine's zone rather than a name.
func zoneNameOK(s string) bool {
	if s == "" || s == "Local" || len(s) > 64 || !isLetter(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !isLetter(b) && !isDigit(b) && !strings.ContainsRune("/_+-", rune(b)) {
			return false
		}
	}
	return !strings.Contains(s, "..")
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
func isDigit(b byte) bool  { return b >= '0' && b <= '9' }

// parseOffset reads "hh", "hhmm" or "hh:mm" (colon: whether "hh:mm" is
// accepted) as seconds.
func parseOffset(s string, colon bool) (int, bool) {
	switch {
	case len(s) == 2:
		s += "00"
	case len(s) == 5 && colon && s[2] == ':':
		s = s[:2] + s[3:]
	case len(s) == 4:
	default:
		return 0, false
	}
	for i := 0; i < 4; i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
	}
	h := int(s[0]-'0')*10 + int(s[1]-'0')
	m := int(s[2]-'0')*10 + int(s[3]-'0')
	if m > 59 {
		return 0, false
	}
	return h*3600 + m*60, true
}

// wholeNumber reads an integral number of any numeric type (2, 2.0,
// Decimal128 2) as an int64.
func wholeNumber(v any) (int64, bool) {
	n, ok := ToNumber(v)
	if !ok {
		return 0, false
	}
	switch n.Kind {
	case 'i':
		return n.I, true
	case 'f':
		if n.F == math.Trunc(n.F) && n.F >= -(1<<63) && n.F < 1<<63 {
			return int64(n.F), true
		}
	}
	return 0, false
}

// The dates a BSON date can hold: milliseconds since the epoch in an
// int64.
var (
	minDate = time.UnixMilli(math.MinInt64).UTC()
	maxDate = time.UnixMilli(math.MaxInt64).UTC()
)

// checkDate refuses a result outside what a BSON date holds, and rounds
// it to the millisecond.
func checkDate(op string, t time.Time) (time.Time, error) {
	if t.Before(minDate) || t.After(maxDate) {
		return time.Time{}, evalErr(op, "the result is outside the range of dates")
	}
	return time.UnixMilli(t.UnixMilli()).UTC(), nil
}

// ---- $dateToParts ----

type dateToPartsNode struct {
	op            string
	date, tz, iso node
}

func compileDateToParts(c *compiler, op string, arg any) (node, error) {
	args, err := c.namedOperands(op, arg, []string{"date"}, []string{"timezone", "iso8601"})
	if err != nil {
		return nil, err
	}
	return &dateToPartsNode{op: op, date: args["date"], tz: args["timezone"], iso: args["iso8601"]}, nil
}

func (n *dateToPartsNode) eval(env *Env) (any, error) {
	loc, null, err := evalZone(n.op, env, n.tz)
	if err != nil || null {
		return nil, err
	}
	iso := false
	if n.iso != nil {
		v, err := n.iso.eval(env)
		if err != nil || nullish(v) {
			return nil, err
		}
		b, ok := v.(bool)
		if !ok {
			return nil, evalErr(n.op, "iso8601 must be a boolean, not %s", TypeName(v))
		}
		iso = b
	}
	v, err := n.date.eval(env)
	if err != nil || nullish(v) {
		return nil, err
	}
	t, err := toDate(n.op, v)
	if err != nil {
		return nil, err
	}
	t = t.In(loc)
	out := codec.Document{
		"hour":        int32(t.Hour()),
		"minute":      int32(t.Minute()),
		"second":      int32(t.Second()),
		"millisecond": int32(t.Nanosecond() / 1e6),
	}
	if iso {
		y, w := t.ISOWeek()
		out["isoWeekYear"], out["isoWeek"], out["isoDayOfWeek"] = int32(y), int32(w), int32(isoWeekday(t))
	} else {
		out["year"], out["month"], out["day"] = int32(t.Year()), int32(t.Month()), int32(t.Day())
	}
	return out, nil
}

// ---- $dateFromParts ----

// The arguments of $dateFromParts: the calendar form, then the ISO week
// form; the time of day is common to both.
var (
	calendarParts = []string{"year", "month", "day"}
	isoParts      = []string{"isoWeekYear", "isoWeek", "isoDayOfWeek"}
	timeParts     = []string{"hour", "minute", "second", "millisecond"}
)

type dateFromPartsNode struct {
	op    string
	iso   bool
	names []string // the date's three parts, then timeParts
	parts []node   // by names; nil: the part's default
	tz    node
}

func compileDateFromParts(c *compiler, op string, arg any) (node, error) {
	m, ok := codec.AsDocument(arg)
	if !ok {
		return nil, compileErr(op, "takes a document of named arguments, not %v", arg)
	}
	hasAny := func(names []string) bool {
		for _, k := range names {
			if hasKey(m, k) {
				return true
			}
		}
		return false
	}
	n := &dateFromPartsNode{op: op}
	switch cal, iso := hasAny(calendarParts), hasAny(isoParts); {
	case cal && iso:
		return nil, compileErr(op, "the calendar fields (year, month, day) and the ISO week fields (isoWeekYear, isoWeek, isoDayOfWeek) cannot be mixed")
	case iso:
		n.iso = true
		n.names = append(append([]string{}, isoParts...), timeParts...)
		if !hasKey(m, "isoWeekYear") {
			return nil, compileErr(op, "isoWeekYear is required with isoWeek or isoDayOfWeek")
		}
	default:
		n.names = append(append([]string{}, calendarParts...), timeParts...)
		if !hasKey(m, "year") {
			return nil, compileErr(op, "either year or isoWeekYear is required")
		}
	}
	args, err := c.namedOperands(op, arg, n.names[:1], append(append([]string{}, n.names[1:]...), "timezone"))
	if err != nil {
		return nil, err
	}
	n.tz = args["timezone"]
	n.parts = make([]node, len(n.names))
	for i, name := range n.names {
		n.parts[i] = args[name]
	}
	return n, nil
}

func (n *dateFromPartsNode) eval(env *Env) (any, error) {
	var vals [7]int64
	for i, p := range n.parts {
		if p == nil {
			if i == 1 || i == 2 {
				vals[i] = 1 // month, day, isoWeek, isoDayOfWeek
			}
			continue
		}
		v, err := p.eval(env)
		if err != nil || nullish(v) {
			return nil, err
		}
		x, ok := wholeNumber(v)
		if !ok {
			return nil, evalErr(n.op, "%s must evaluate to an integer, not %v", n.names[i], v)
		}
		if i == 0 {
			if x < 1 || x > 9999 {
				return nil, evalErr(n.op, "%s must evaluate to an integer in the range 1 to 9999, not %d", n.names[i], x)
			}
		} else if x < -32768 || x > 32767 {
			return nil, evalErr(n.op, "%s must evaluate to an integer in the range -32768 to 32767, not %d", n.names[i], x)
		}
		vals[i] = x
	}
	loc, null, err := evalZone(n.op, env, n.tz)
	if err != nil || null {
		return nil, err
	}
	y, mo, d := int(vals[0]), time.Month(vals[1]), int(vals[2])
	if n.iso {
		// Day 1 of ISO week 1 is the Monday of the week holding January 4.
		jan4 := time.Date(y, 1, 4, 0, 0, 0, 0, time.UTC)
		mo, d = 1, 4-(isoWeekday(jan4)-1)+int(vals[1]-1)*7+int(vals[2]-1)
	}
	t := time.Date(y, mo, d, int(vals[3]), int(vals[4]), int(vals[5]), int(vals[6])*1e6, loc)
	return checkDate(n.op, t)
}

// ---- units, $dateAdd, $dateSubtract ----

// timeUnit is a unit of $dateAdd, $dateDiff and $dateTrunc.
type timeUnit int

const (
	unitMillisecond timeUnit = iota
	unitSecond
	unitMinute
	unitHour
	unitDay
	unitWeek
	unitMonth
	unitQuarter
	unitYear
)

var timeUnits = map[string]timeUnit{
	"millisecond": unitMillisecond, "second": unitSecond, "minute": unitMinute,
	"hour": unitHour, "day": unitDay, "week": unitWeek, "month": unitMonth,
	"quarter": unitQuarter, "year": unitYear,
}

// unitMillis is the length of the units of fixed length.
var unitMillis = map[timeUnit]int64{
	unitMillisecond: 1, unitSecond: 1000, unitMinute: 60_000, unitHour: 3_600_000,
}

func parseUnit(op string, v any) (timeUnit, error) {
	s, ok := v.(string)
	if !ok {
		return 0, evalErr(op, "unit must be a string, not %s", TypeName(v))
	}
	u, ok := timeUnits[s]
	if !ok {
		return 0, evalErr(op, "unknown time unit value: %q", s)
	}
	return u, nil
}

// parseStartOfWeek reads a day name ("monday", "Mon"...), case
// insensitively, as 1 (Monday) ... 7 (Sunday).
func parseStartOfWeek(op string, v any) (int, error) {
	s, ok := v.(string)
	if !ok {
		return 0, evalErr(op, "startOfWeek must be a string, not %s", TypeName(v))
	}
	s = strings.ToLower(s)
	for i, day := range []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"} {
		if s == day || s == day[:3] {
			return i + 1, nil
		}
	}
	return 0, evalErr(op, "unknown day of week value: %q", v)
}

// evalArgs evaluates named arguments in order; null is true when one of
// them is null or missing (an absent optional one, nil, gives nil).
func evalArgs(env *Env, nodes ...node) (vals []any, null bool, err error) {
	vals = make([]any, len(nodes))
	for i, n := range nodes {
		if n == nil {
			continue
		}
		v, err := n.eval(env)
		if err != nil {
			return nil, false, err
		}
		if nullish(v) {
			null = true
		}
		vals[i] = v
	}
	return vals, null, nil
}

type dateAddNode struct {
	op                          string
	start, unit, amount, tzNode node
}

func compileDateAdd(c *compiler, op string, arg any) (node, error) {
	args, err := c.namedOperands(op, arg, []string{"startDate", "unit", "amount"}, []string{"timezone"})
	if err != nil {
		return nil, err
	}
	return &dateAddNode{op: op, start: args["startDate"], unit: args["unit"], amount: args["amount"], tzNode: args["timezone"]}, nil
}

func (n *dateAddNode) eval(env *Env) (any, error) {
	vals, null, err := evalArgs(env, n.start, n.unit, n.amount)
	if err != nil || null {
		return nil, err
	}
	loc, null, err := evalZone(n.op, env, n.tzNode)
	if err != nil || null {
		return nil, err
	}
	t, err := toDate(n.op, vals[0])
	if err != nil {
		return nil, err
	}
	unit, err := parseUnit(n.op, vals[1])
	if err != nil {
		return nil, err
	}
	amount, ok := wholeNumber(vals[2])
	if !ok {
		return nil, evalErr(n.op, "amount must be an integer, not %v", vals[2])
	}
	if n.op == "$dateSubtract" {
		if amount == math.MinInt64 {
			return nil, evalErr(n.op, "amount %d is out of range", amount)
		}
		amount = -amount
	}
	return dateAdd(n.op, t, unit, amount, loc)
}

// maxAddDays bounds a $dateAdd amount in days (and the other units by
// it): beyond it no result is a date.
const maxAddDays = math.MaxUint64/86_400_000 + 1

// maxAddAmount is the bound of a $dateAdd amount in each unit but the
// millisecond.
var maxAddAmount = map[timeUnit]int64{
	unitYear:    maxAddDays/365 + 1,
	unitQuarter: (maxAddDays/365 + 1) * 4,
	unitMonth:   (maxAddDays/365 + 1) * 12,
	unitWeek:    maxAddDays / 7,
	unitDay:     maxAddDays,
	unitHour:    maxAddDays * 24,
	unitMinute:  maxAddDays * 24 * 60,
	unitSecond:  maxAddDays * 24 * 3600,
}

// dateAdd adds amount units to t as MongoDB does: units of a day or
// more move the wall clock of loc (the time of day is kept across a
// daylight saving change), and a month (quarter, year) that lacks the
// day lands on its last day; smaller units add elapsed time.
func dateAdd(op string, t time.Time, unit timeUnit, amount int64, loc *time.Location) (time.Time, error) {
	if unit == unitMillisecond {
		ms := t.UnixMilli()
		if amount > 0 && ms > math.MaxInt64-amount || amount < 0 && ms < math.MinInt64-amount {
			return time.Time{}, evalErr(op, "the result is outside the range of dates")
		}
		return time.UnixMilli(ms + amount).UTC(), nil
	}
	if max := maxAddAmount[unit]; amount <= -max || amount >= max {
		return time.Time{}, evalErr(op, "amount %d is out of range for unit %s", amount, unitName(unit))
	}
	var r time.Time
	switch unit {
	case unitSecond, unitMinute, unitHour:
		r = time.Unix(t.Unix()+amount*unitMillis[unit]/1000, int64(t.Nanosecond()))
	default:
		lt := t.In(loc)
		y, mo, d := lt.Date()
		h, mi, s := lt.Clock()
		switch unit {
		case unitDay, unitWeek:
			if unit == unitWeek {
				amount *= 7
			}
			r = time.Date(y, mo, d+int(amount), h, mi, s, lt.Nanosecond(), loc)
		default:
			if unit == unitYear {
				amount *= 12
			} else if unit == unitQuarter {
				amount *= 3
			}
			months := int64(y)*12 + int64(mo-1) + amount
			ry, rm := int(floorDiv(months, 12)), time.Month(floorMod(months, 12)+1)
			r = time.Date(ry, rm, min(d, daysIn(ry, rm)), h, mi, s, lt.Nanosecond(), loc)
		}
	}
	return checkDate(op, r)
}

func unitName(u timeUnit) string {
	for name, x := range timeUnits {
		if x == u {
			return name
		}
	}
	return "?"
}

// daysIn is the number of days of month m of year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// ---- $dateDiff ----

type dateDiffNode struct {
	op                             string
	start, end, unit, tzNode, week node
}

func compileDateDiff(c *compiler, op string, arg any) (node, error) {
	args, err := c.namedOperands(op, arg, []string{"startDate", "endDate", "unit"}, []string{"timezone", "startOfWeek"})
	if err != nil {
		return nil, err
	}
	return &dateDiffNode{op: op, start: args["startDate"], end: args["endDate"], unit: args["unit"],
		tzNode: args["timezone"], week: args["startOfWeek"]}, nil
}

func (n *dateDiffNode) eval(env *Env) (any, error) {
	vals, null, err := evalArgs(env, n.start, n.end, n.unit)
	if err != nil || null {
		return nil, err
	}
	loc, null, err := evalZone(n.op, env, n.tzNode)
	if err != nil || null {
		return nil, err
	}
	start, err := toDate(n.op, vals[0])
	if err != nil {
		return nil, err
	}
	end, err := toDate(n.op, vals[1])
	if err != nil {
		return nil, err
	}
	unit, err := parseUnit(n.op, vals[2])
	if err != nil {
		return nil, err
	}
	sow := 7 // Sunday
	if unit == unitWeek && n.week != nil {
		v, err := n.week.eval(env)
		if err != nil || nullish(v) {
			return nil, err
		}
		if sow, err = parseStartOfWeek(n.op, v); err != nil {
			return nil, err
		}
	}
	if unit == unitMillisecond {
		a, b := start.UnixMilli(), end.UnixMilli()
		if b >= 0 && a < 0 && b > math.MaxInt64+a || b < 0 && a > 0 && b < math.MinInt64+a {
			return nil, evalErr(n.op, "the difference overflows")
		}
		return b - a, nil
	}
	return dateDiff(start, end, unit, loc, sow), nil
}

// civil is a date of the proleptic Gregorian calendar.
type civil struct {
	y int64
	m int64 // 1..12
	d int64
}

func civilOf(t time.Time) civil {
	y, m, d := t.Date()
	return civil{int64(y), int64(m), int64(d)}
}

// dayNumber counts days from 1970-01-01 (H. Hinnant's days_from_civil).
func (c civil) dayNumber() int64 {
	y := c.y
	if c.m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := (c.m + 9) % 12
	doy := (153*mp+2)/5 + c.d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// weekday is 0 for sow (1 Monday ... 7 Sunday) ... 6 for the day
// before it.
func (c civil) weekday(sow int) int64 {
	iso := floorMod(c.dayNumber()+3, 7) + 1 // 1970-01-01 was a Thursday
	return (iso - int64(sow) + 7) % 7
}

// diffCivil counts the boundaries of unit (year ... day) crossed from a
// to b, as MongoDB's $dateDiff does.
func diffCivil(a, b civil, unit timeUnit, sow int) int64 {
	switch unit {
	case unitYear:
		return b.y - a.y
	case unitQuarter:
		return (b.m-1)/3 - (a.m-1)/3 + (b.y-a.y)*4
	case unitMonth:
		return b.m - a.m + (b.y-a.y)*12
	case unitWeek:
		return (b.dayNumber() - a.dayNumber() + a.weekday(sow) - b.weekday(sow)) / 7
	}
	return b.dayNumber() - a.dayNumber()
}

// dateDiff is $dateDiff for units of a second or more: the boundaries of unit crossed from start to
// end on loc's wall clock; for hours, minutes and seconds a change of
// the zone's offset between them counts too (elapsed time, not the wall
// clock's).
func dateDiff(start, end time.Time, unit timeUnit, loc *time.Location, sow int) int64 {
	ls, le := start.In(loc), end.In(loc)
	a, b := civilOf(ls), civilOf(le)
	if unit >= unitDay {
		return diffCivil(a, b, unit, sow)
	}
	_, zs := ls.Zone()
	_, ze := le.Zone()
	corr := int64(zs - ze)
	hours := int64(le.Hour()-ls.Hour()) + (b.dayNumber()-a.dayNumber())*24
	if unit == unitHour {
		return hours + corr/3600
	}
	minutes := int64(le.Minute()-ls.Minute()) + hours*60
	if unit == unitMinute {
		return minutes + corr/60
	}
	return int64(le.Second()-ls.Second()) + minutes*60 + corr
}

// ---- $dateTrunc ----

type dateTruncNode struct {
	op                              string
	date, unit, binSize, tzNode, sw node
}

func compileDateTrunc(c *compiler, op string, arg any) (node, error) {
	args, err := c.namedOperands(op, arg, []string{"date", "unit"}, []string{"binSize", "timezone", "startOfWeek"})
	if err != nil {
		return nil, err
	}
	return &dateTruncNode{op: op, date: args["date"], unit: args["unit"], binSize: args["binSize"],
		tzNode: args["timezone"], sw: args["startOfWeek"]}, nil
}

// maxTruncBins bounds $dateTrunc's binSize for units of a day or more.
const maxTruncBins = 100_000_000_000

func (n *dateTruncNode) eval(env *Env) (any, error) {
	vals, null, err := evalArgs(env, n.date, n.unit, n.binSize)
	if err != nil || null {
		return nil, err
	}
	loc, null, err := evalZone(n.op, env, n.tzNode)
	if err != nil || null {
		return nil, err
	}
	t, err := toDate(n.op, vals[0])
	if err != nil {
		return nil, err
	}
	unit, err := parseUnit(n.op, vals[1])
	if err != nil {
		return nil, err
	}
	bin := int64(1)
	if n.binSize != nil {
		b, ok := wholeNumber(vals[2])
		if !ok || b <= 0 {
			return nil, evalErr(n.op, "binSize must be a positive integer, not %v", vals[2])
		}
		bin = b
	}
	sow := 7
	if unit == unitWeek && n.sw != nil {
		v, err := n.sw.eval(env)
		if err != nil || nullish(v) {
			return nil, err
		}
		if sow, err = parseStartOfWeek(n.op, v); err != nil {
			return nil, err
		}
	}
	return dateTrunc(n.op, t, unit, bin, loc, sow)
}

// dateTrunc is $dateTrunc: the start of the bin of bin units holding t,
// bins counted from 2000-01-01 on loc's wall clock (for weeks, from the
// first day sow on or after it).
func dateTrunc(op string, t time.Time, unit timeUnit, bin int64, loc *time.Location, sow int) (time.Time, error) {
	const refUTC = 946_684_800_000 // 2000-01-01T00:00:00Z
	_, off := time.UnixMilli(refUTC).In(loc).Zone()
	refMs := int64(refUTC) - int64(off)*1000
	refDay := int64(1)
	if unit == unitWeek {
		refDow := (6 - int64(sow) + 7) % 7 // 2000-01-01 was a Saturday
		adjust := (7 - refDow) % 7
		refMs += adjust * 86_400_000
		refDay += adjust
	}
	if ms, ok := unitMillis[unit]; ok {
		if bin > math.MaxInt64/ms {
			return time.Time{}, evalErr(op, "binSize %d is too large", bin)
		}
		binMs := bin * ms
		d := t.UnixMilli()
		if d < math.MinInt64+refMs {
			return time.Time{}, evalErr(op, "the result is outside the range of dates")
		}
		return checkDate(op, time.UnixMilli(d-floorMod(d-refMs, binMs)))
	}
	if bin > maxTruncBins {
		return time.Time{}, evalErr(op, "binSize %d is too large (at most %d)", bin, int64(maxTruncBins))
	}
	dist := diffCivil(civil{2000, 1, refDay}, civilOf(t.In(loc)), unit, sow)
	return dateAdd(op, time.UnixMilli(refMs), unit, dist-floorMod(dist, bin), loc)
}
