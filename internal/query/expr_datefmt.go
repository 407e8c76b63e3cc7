package query

import (
	"strconv"
	"strings"
	"time"
)

// $dateToString and $dateFromString: dates to and from strings, with
// MongoDB's format specifiers (%Y %m %d %H %M %S %L %j %w %u %U %V %G
// %z %Z %b %B %%).

// defaultDateFormat is $dateToString's format when none is given.
const defaultDateFormat = "%Y-%m-%dT%H:%M:%S.%LZ"

// maxDateFormat bounds the length of a format string and of a date
// string to parse: no date needs more.
const maxDateFormat = 1 << 10

// fmtItem is one piece of a compiled format: a literal or, when spec is
// not 0, a specifier (%Y: 'Y').
type fmtItem struct {
	spec byte
	lit  string
}

// dateSpecs are the specifiers MongoDB knows.
const dateSpecs = "bBdGHjLmMSuUVwYzZ"

var (
	monthNames = []string{"January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
)

// parseDateFormat compiles a format string; errors are made by mkErr
// (a compile error for a constant format, else an evaluation error).
func parseDateFormat(s string, mkErr func(format string, args ...any) error) ([]fmtItem, error) {
	if len(s) > maxDateFormat {
		return nil, mkErr("format is longer than %d bytes", maxDateFormat)
	}
	var items []fmtItem
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			lit.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return nil, mkErr("unmatched '%%' at end of format string")
		}
		i++
		switch c := s[i]; {
		case c == '%':
			lit.WriteByte('%')
		case strings.IndexByte(dateSpecs, c) >= 0:
			if lit.Len() > 0 {
				items = append(items, fmtItem{lit: lit.String()})
				lit.Reset()
			}
			items = append(items, fmtItem{spec: c})
		default:
			return nil, mkErr("invalid format character '%%%c' in format string", c)
		}
	}
	if lit.Len() > 0 {
		items = append(items, fmtItem{lit: lit.String()})
	}
	return items, nil
}

// formatNode is a format argument: compiled once when it is a constant.
type formatNode struct {
	n     node      // nil when constant
	items []fmtItem // the constant's
}

// compileFormat compiles the format argument of op (nil: absent).
func (c *compiler) compileFormat(op string, n node) (*formatNode, error) {
	if n == nil {
		return nil, nil
	}
	if l, ok := n.(*literalNode); ok {
		if s, ok := l.v.(string); ok {
			items, err := parseDateFormat(s, func(f string, a ...any) error { return compileErr(op, f, a...) })
			if err != nil {
				return nil, err
			}
			return &formatNode{items: items}, nil
		}
		if !nullish(l.v) {
			return nil, compileErr(op, "format must be a string, not %s", TypeName(l.v))
		}
	}
	return &formatNode{n: n}, nil
}

// eval gives the format's items; null when it is null or missing.
func (f *formatNode) eval(op string, env *Env) (items []fmtItem, null bool, err error) {
	if f.n == nil {
		return f.items, false, nil
	}
	v, err := f.n.eval(env)
	if err != nil || nullish(v) {
		return nil, err == nil, err
	}
	s, ok := v.(string)
	if !ok {
		return nil, false, evalErr(op, "format must be a string, not %s", TypeName(v))
	}
	items, err = parseDateFormat(s, func(f string, a ...any) error { return evalErr(op, f, a...) })
	return items, false, err
}

var defaultFormatItems, _ = parseDateFormat(defaultDateFormat, nil)

// ---- $dateToString ----

type dateToStringNode struct {
	op               string
	date, tz, onNull node
	format           *formatNode
}

func compileDateToString(c *compiler, op string, arg any) (node, error) {
	args, err := c.namedOperands(op, arg, []string{"date"}, []string{"format", "timezone", "onNull"})
	if err != nil {
		return nil, err
	}
	n := &dateToStringNode{op: op, date: args["date"], tz: args["timezone"], onNull: args["onNull"]}
	if n.format, err = c.compileFormat(op, args["format"]); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *dateToStringNode) eval(env *Env) (any, error) {
	v, err := n.date.eval(env)
	if err != nil {
		return nil, err
	}
	items, nullFormat := defaultFormatItems, false
	if n.format != nil {
		if items, nullFormat, err = n.format.eval(n.op, env); err != nil {
			return nil, err
		}
	}
	loc, nullZone, err := evalZone(n.op, env, n.tz)
	if err != nil {
		return nil, err
	}
	if nullish(v) {
		if n.onNull != nil {
			return n.onNull.eval(env)
		}
		return nil, nil
	}
	if nullFormat || nullZone {
		return nil, nil
	}
	t, err := toDate(n.op, v)
	if err != nil {
		return nil, err
	}
	return formatDate(n.op, items, t.In(loc))
}

// formatDate writes t (in its zone) with a compiled format.
func formatDate(op string, items []fmtItem, t time.Time) (string, error) {
	var b strings.Builder
	pad := func(v, width int) {
		s := strconv.Itoa(v)
		for i := len(s); i < width; i++ {
			b.WriteByte('0')
		}
		b.WriteString(s)
	}
	year := func(y int) error {
		if y < 0 || y > 9999 {
			return evalErr(op, "year %d is outside the range 0 to 9999 the format can write", y)
		}
		pad(y, 4)
		return nil
	}
	for _, it := range items {
		switch it.spec {
		case 0:
			b.WriteString(it.lit)
		case 'Y':
			if err := year(t.Year()); err != nil {
				return "", err
			}
		case 'G':
			y, _ := t.ISOWeek()
			if err := year(y); err != nil {
				return "", err
			}
		case 'm':
			pad(int(t.Month()), 2)
		case 'd':
			pad(t.Day(), 2)
		case 'H':
			pad(t.Hour(), 2)
		case 'M':
			pad(t.Minute(), 2)
		case 'S':
			pad(t.Second(), 2)
		case 'L':
			pad(t.Nanosecond()/1e6, 3)
		case 'j':
			pad(t.YearDay(), 3)
		case 'w':
			pad(int(t.Weekday())+1, 1)
		case 'u':
			pad(isoWeekday(t), 1)
		case 'U':
			pad(sundayWeek(t), 2)
		case 'V':
			_, w := t.ISOWeek()
			pad(w, 2)
		case 'b':
			b.WriteString(monthNames[t.Month()-1][:3])
		case 'B':
			b.WriteString(monthNames[t.Month()-1])
		case 'z', 'Z':
			_, off := t.Zone()
			if it.spec == 'Z' {
				b.WriteString(strconv.Itoa(off / 60))
				continue
			}
			if off < 0 {
				b.WriteByte('-')
				off = -off
			} else {
				b.WriteByte('+')
			}
			pad(off/3600, 2)
			pad(off%3600/60, 2)
		}
	}
	return b.String(), nil
}

// ---- $dateFromString ----

type dateFromStringNode struct {
	op                    string
	str, tz, onErr, onNul node
	format                *formatNode
}

func compileDateFromString(c *compiler, op string, arg any) (node, error) {
	args, err := c.namedOperands(op, arg, []string{"dateString"}, []string{"format", "timezone", "onError", "onNull"})
	if err != nil {
		return nil, err
	}
	n := &dateFromStringNode{op: op, str: args["dateString"], tz: args["timezone"], onErr: args["onError"], onNul: args["onNull"]}
	if n.format, err = c.compileFormat(op, args["format"]); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *dateFromStringNode) eval(env *Env) (any, error) {
	v, err := n.str.eval(env)
	if err != nil {
		return nil, err
	}
	var items []fmtItem
	nullFormat := false
	if n.format != nil {
		if items, nullFormat, err = n.format.eval(n.op, env); err != nil {
			return nil, err
		}
	}
	loc, nullZone, err := evalZone(n.op, env, n.tz)
	if err != nil {
		return nil, err
	}
	if nullish(v) {
		if n.onNul != nil {
			return n.onNul.eval(env)
		}
		return nil, nil
	}
	if nullFormat || nullZone {
		return nil, nil
	}
	t, perr := n.parse(v, items, loc)
	if perr != nil {
		if n.onErr != nil {
			return n.onErr.eval(env)
		}
		return nil, perr
	}
	return t, nil
}

func (n *dateFromStringNode) parse(v any, items []fmtItem, loc *time.Location) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, evalErr(n.op, "dateString must be a string, not %s", TypeName(v))
	}
	if len(s) > maxDateFormat {
		return time.Time{}, evalErr(n.op, "dateString is longer than %d bytes", maxDateFormat)
	}
	p := dateParse{s: s, year: 1970, month: 1, day: 1}
	var err error
	if items == nil {
		err = p.free()
	} else {
		err = p.format(items)
	}
	if err == nil && p.pos != len(p.s) {
		err = errorString("trailing data " + strconv.Quote(p.s[p.pos:]))
	}
	if err != nil {
		return time.Time{}, evalErr(n.op, "error parsing date string %q: %v", s, err)
	}
	if p.zone != nil {
		if n.tz != nil {
			return time.Time{}, evalErr(n.op, "you cannot pass in a date/time string with time zone information (%q) together with a timezone argument", s)
		}
		loc = p.zone
	}
	t, err := p.date(loc)
	if err != nil {
		return time.Time{}, evalErr(n.op, "error parsing date string %q: %v", s, err)
	}
	return checkDate(n.op, t)
}

type errorString string

func (e errorString) Error() string { return string(e) }

// dateParse reads a date string: the parts found, the zone if the
// string names one.
type dateParse struct {
	s   string
	pos int

	year, month, day, hour, min, sec, ms int
	yday                                 int // %j, 0: not given
	isoYear, isoWeek, isoDay             int // %G %V %u, isoYear 0: not given
	zone                                 *time.Location
}

// num reads between minD and maxD digits.
func (p *dateParse) num(minD, maxD int, what string) (int, error) {
	start := p.pos
	for p.pos < len(p.s) && p.pos-start < maxD && isDigit(p.s[p.pos]) {
		p.pos++
	}
	if p.pos-start < minD {
		return 0, errorString("expected " + what + " at position " + strconv.Itoa(start))
	}
	v, _ := strconv.Atoi(p.s[start:p.pos])
	return v, nil
}

func (p *dateParse) lit(c byte) bool {
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

// free reads the forms a date string takes without a format:
// "2017-02-08", "2017-02-08T12:10", "2017-02-08T12:10:40.787" ('T' or a
// space between date and time), optionally followed by "Z", an offset
// ("+05:30", "-0500", "+03") or, after a space, a zone name.
func (p *dateParse) free() error {
	var err error
	if p.year, err = p.num(4, 4, "a 4-digit year"); err != nil {
		return err
	}
	if p.pos < len(p.s) && isDigit(p.s[p.pos]) {
		return errorString("a year has 4 digits")
	}
	sep := byte('-')
	if !p.lit('-') {
		if !p.lit('/') {
			return errorString("expected '-' after the year")
		}
		sep = '/'
	}
	if p.month, err = p.num(1, 2, "a month"); err != nil {
		return err
	}
	if !p.lit(sep) {
		return errorString("expected a separator after the month")
	}
	if p.day, err = p.num(1, 2, "a day"); err != nil {
		return err
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'T' || p.s[p.pos] == 't' || p.s[p.pos] == ' ' && p.pos+1 < len(p.s) && isDigit(p.s[p.pos+1])) {
		p.pos++
		if p.hour, err = p.num(1, 2, "an hour"); err != nil {
			return err
		}
		if !p.lit(':') {
			return errorString("expected ':' after the hour")
		}
		if p.min, err = p.num(2, 2, "minutes"); err != nil {
			return err
		}
		if p.lit(':') {
			if p.sec, err = p.num(2, 2, "seconds"); err != nil {
				return err
			}
			if p.lit('.') || p.lit(',') {
				if err := p.fraction(); err != nil {
					return err
				}
			}
		}
	}
	return p.zoneSuffix()
}

// fraction reads the digits of a second's fraction (milliseconds kept).
func (p *dateParse) fraction() error {
	start := p.pos
	for p.pos < len(p.s) && isDigit(p.s[p.pos]) {
		p.pos++
	}
	digits := p.s[start:p.pos]
	if digits == "" {
		return errorString("expected the digits of a fraction of a second")
	}
	digits = (digits + "00")[:3]
	p.ms, _ = strconv.Atoi(digits)
	return nil
}

// zoneSuffix reads what may end a free-form date string: a zone.
func (p *dateParse) zoneSuffix() error {
	if p.pos == len(p.s) {
		return nil
	}
	switch c := p.s[p.pos]; {
	case c == 'Z' || c == 'z':
		p.pos++
		p.zone = time.UTC
		return nil
	case c == '+' || c == '-':
		return p.offset()
	case c == ' ':
		rest := strings.TrimSpace(p.s[p.pos:])
		loc, err := parseZone("$dateFromString", rest)
		if err != nil {
			return errorString("unknown time zone " + strconv.Quote(rest))
		}
		p.zone, p.pos = loc, len(p.s)
		return nil
	}
	return errorString("unexpected " + strconv.Quote(p.s[p.pos:]))
}

// offset reads "+hh", "+hhmm" or "+hh:mm".
func (p *dateParse) offset() error {
	sign := p.s[p.pos]
	p.pos++
	start := p.pos
	for p.pos < len(p.s) && (isDigit(p.s[p.pos]) || p.s[p.pos] == ':') && p.pos-start < 5 {
		p.pos++
	}
	secs, ok := parseOffset(p.s[start:p.pos], true)
	if !ok {
		return errorString("invalid UTC offset " + strconv.Quote(p.s[start-1:p.pos]))
	}
	if sign == '-' {
		secs = -secs
	}
	p.zone = time.FixedZone(p.s[start-1:p.pos], secs)
	return nil
}

// format reads the string with a compiled format.
func (p *dateParse) format(items []fmtItem) error {
	var err error
	for _, it := range items {
		if it.spec == 0 {
			if !strings.HasPrefix(p.s[p.pos:], it.lit) {
				return errorString("expected " + strconv.Quote(it.lit) + " at position " + strconv.Itoa(p.pos))
			}
			p.pos += len(it.lit)
			continue
		}
		switch it.spec {
		case 'Y':
			p.year, err = p.num(4, 4, "a 4-digit year")
		case 'G':
			p.isoYear, err = p.num(4, 4, "a 4-digit ISO year")
		case 'm':
			p.month, err = p.num(1, 2, "a month")
		case 'd':
			p.day, err = p.num(1, 2, "a day")
		case 'H':
			p.hour, err = p.num(1, 2, "an hour")
		case 'M':
			p.min, err = p.num(1, 2, "minutes")
		case 'S':
			p.sec, err = p.num(1, 2, "seconds")
		case 'L':
			err = p.fraction()
		case 'j':
			p.yday, err = p.num(1, 3, "a day of the year")
		case 'V':
			p.isoWeek, err = p.num(1, 2, "an ISO week")
		case 'u':
			p.isoDay, err = p.num(1, 1, "an ISO day of the week")
		case 'U':
			_, err = p.num(1, 2, "a week") // read, as MongoDB does, but not used
		case 'w':
			_, err = p.num(1, 1, "a day of the week")
		case 'b', 'B':
			err = p.monthName(it.spec == 'b')
		case 'z':
			if p.lit('Z') {
				p.zone = time.UTC
			} else if p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
				err = p.offset()
			} else {
				err = errorString("expected a UTC offset at position " + strconv.Itoa(p.pos))
			}
		case 'Z':
			err = p.minutesOffset()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// monthName reads a month's name, case insensitively (abbr: its first
// three letters).
func (p *dateParse) monthName(abbr bool) error {
	rest := strings.ToLower(p.s[p.pos:])
	for i, name := range monthNames {
		if abbr {
			name = name[:3]
		}
		if strings.HasPrefix(rest, strings.ToLower(name)) {
			p.month = i + 1
			p.pos += len(name)
			return nil
		}
	}
	return errorString("expected a month name at position " + strconv.Itoa(p.pos))
}

// minutesOffset reads %Z: a signed number of minutes east of UTC.
func (p *dateParse) minutesOffset() error {
	neg := false
	if p.lit('-') {
		neg = true
	} else {
		p.lit('+')
	}
	m, err := p.num(1, 4, "an offset in minutes")
	if err != nil {
		return err
	}
	if neg {
		m = -m
	}
	p.zone = time.FixedZone(strconv.Itoa(m), m*60)
	return nil
}

// date is the instant the parts name in loc; it refuses parts out of
// their ranges (no February 30th).
func (p *dateParse) date(loc *time.Location) (time.Time, error) {
	y, mo, d := p.year, p.month, p.day
	switch {
	case p.isoYear != 0 || p.isoWeek != 0 || p.isoDay != 0:
		if p.isoWeek < 1 || p.isoWeek > 53 || p.isoDay > 7 {
			return time.Time{}, errorString("ISO week or day of the week out of range")
		}
		if p.isoDay == 0 {
			p.isoDay = 1
		}
		jan4 := time.Date(p.isoYear, 1, 4, 0, 0, 0, 0, time.UTC)
		y, mo, d = p.isoYear, 1, 4-(isoWeekday(jan4)-1)+(p.isoWeek-1)*7+p.isoDay-1
	case p.yday != 0:
		if p.yday > 365 && !(p.yday == 366 && daysIn(y, 2) == 29) {
			return time.Time{}, errorString("day of the year out of range")
		}
		mo, d = 1, p.yday
	default:
		if mo < 1 || mo > 12 || d < 1 || d > daysIn(y, time.Month(mo)) {
			return time.Time{}, errorString("month or day out of range")
		}
	}
	if p.hour > 23 || p.min > 59 || p.sec > 59 {
		return time.Time{}, errorString("time of day out of range")
	}
	return time.Date(y, time.Month(mo), d, p.hour, p.min, p.sec, p.ms*1e6, loc), nil
}
