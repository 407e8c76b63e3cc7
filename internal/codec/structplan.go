package codec

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// A struct is stored as the document of its fields, named as MongoDB's Go
// driver names them, so that model structs written for the driver work
// unchanged:
//
//   - the tag `ttldb:"name,omitempty,inline"` if the field has one, else
//     the tag `bson:"..."`, else a bare tag without a colon (the driver's
//     fallback); an empty name, or no tag at all, gives the field's name
//     lowercased entirely (UserID is "userid");
//   - "-" skips the field; unexported fields are skipped, embedded ones
//     included;
//   - omitempty leaves the field out when it is empty as the driver judges
//     it: a type with an IsZero() bool method by that method (time.Time,
//     ObjectID), a string, slice, map or array of length 0, a nil pointer
//     or interface, the zero number or false; a struct is never empty;
//   - inline (on a struct, a pointer to one, or a map with string keys)
//     stores the inner fields as fields of the outer document, and an
//     inline map receives, on decoding, the fields no other field names.
//     An embedded struct is NOT inlined without the option (the driver's
//     rule): it is a nested document named after its type, lowercased;
//   - the driver's minsize and truncate options are accepted and ignored
//     (ttldb keeps every Go number kind as it is).
//
// A name used twice in one document (after inlining) is refused.

// structPlan is how a struct type is encoded and decoded: computed once
// per type and cached.
type structPlan struct {
	isTime       bool // a time.Time, or a type defined from it: stored as a date
	hooked       bool // the type has a decode hook (a bson type, an Unmarshaler)
	encodeHooked bool // the type has an encode hook (a bson type, a Marshaler)

	fields []fieldPlan
	byName map[string]int // field name to index in fields

	inlineMap     []int // index path of the inline map field (nil: none)
	inlineMapType reflect.Type

	// err is why the type cannot be stored ("" if it can), errPath the
	// field at fault (relative to the struct).
	err, errPath string
}

// fieldPlan is one stored field.
type fieldPlan struct {
	name      string
	goName    string // for errors: the Go field, through inline structs
	index     []int  // through inline structs (pointers among them)
	typ       reflect.Type
	omitEmpty bool
	zeroer    bool // typ has an IsZero() bool method
	// ehook and dhook are typ's encode and decode hooks (driver.go),
	// found once here rather than per value.
	ehook, dhook hook
}

var (
	plans      sync.Map // reflect.Type to *structPlan
	timeType   = reflect.TypeFor[time.Time]()
	zeroerType = reflect.TypeFor[interface{ IsZero() bool }]()
)

// planOf returns the cached plan of struct type t, building it once.
func planOf(t reflect.Type) *structPlan {
	if p, ok := plans.Load(t); ok {
		return p.(*structPlan)
	}
	p := buildPlan(t)
	actual, _ := plans.LoadOrStore(t, p)
	return actual.(*structPlan)
}

// typeHook is of(t), or hookNone for time.Time (which the kind rules
// handle first).
func typeHook(t reflect.Type, of func(reflect.Type) hook) hook {
	if t == timeType {
		return hookNone
	}
	return of(t)
}

func isTimeLike(t reflect.Type) bool {
	return t == timeType || t.Kind() == reflect.Struct && t.ConvertibleTo(timeType)
}

// isObjectIDLike reports whether t is a 12-byte array type named ObjectID,
// as ttldb's (the driver's bson.ObjectID) and the driver v1's
// primitive.ObjectID are: stored as an ObjectID. Any other byte array is
// binary data, as the driver stores it.
func isObjectIDLike(t reflect.Type) bool {
	return t.Kind() == reflect.Array && t.Len() == 12 && t.Elem().Kind() == reflect.Uint8 && t.Name() == "ObjectID"
}

func buildPlan(t reflect.Type) *structPlan {
	p := &structPlan{byName: map[string]int{}, hooked: decodeHookOf(t) != hookNone, encodeHooked: encodeHookOf(t) != hookNone}
	if isTimeLike(t) {
		p.isTime = true
		return p
	}
	p.collect(t, nil, "", map[reflect.Type]bool{t: true})
	if p.err != "" {
		p.fields, p.byName = nil, nil
	}
	return p
}

func (p *structPlan) fail(path, format string, args ...any) {
	if p.err == "" {
		p.err, p.errPath = fmt.Sprintf(format, args...), path
	}
}

// collect adds the fields of struct type t, reached through index path
// prefix (and, for errors, named goPath), to the plan.
func (p *structPlan) collect(t reflect.Type, prefix []int, goPath string, inlining map[reflect.Type]bool) {
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := parseTag(sf)
		if tag.skip {
			continue
		}
		index := append(append([]int(nil), prefix...), i)
		name := tag.name
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		if tag.inline {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Struct && !isTimeLike(ft):
				if inlining[ft] {
					p.fail(name, "inline struct %s contains itself", ft)
					return
				}
				inlining[ft] = true
				p.collect(ft, index, goPath+sf.Name+".", inlining)
				delete(inlining, ft)
			case sf.Type.Kind() == reflect.Map && sf.Type.Key().Kind() == reflect.String:
				if p.inlineMap != nil {
					p.fail(name, "more than one inline map")
					return
				}
				if why := typeProblem(sf.Type.Elem(), 0); why != "" {
					p.fail(name, "%s", why)
					return
				}
				p.inlineMap, p.inlineMapType = index, sf.Type
			default:
				p.fail(name, "inline needs a struct, a pointer to a struct or a map with string keys, not %s", sf.Type)
				return
			}
			continue
		}
		if why := checkName(name); why != "" {
			p.fail(name, "field %s: %s", sf.Name, why)
			return
		}
		if why := typeProblem(sf.Type, 0); why != "" {
			p.fail(name, "%s", why)
			return
		}
		if j, dup := p.byName[name]; dup {
			p.fail(name, "name %q is used by two fields (%s and %s)", name, p.fields[j].goName, goPath+sf.Name)
			return
		}
		p.byName[name] = len(p.fields)
		p.fields = append(p.fields, fieldPlan{
			name: name, goName: goPath + sf.Name, index: index, typ: sf.Type, omitEmpty: tag.omitEmpty,
			zeroer: sf.Type.Implements(zeroerType),
			ehook:  typeHook(sf.Type, encodeHookOf), dhook: typeHook(sf.Type, decodeHookOf),
		})
	}
}

// structTag is a parsed field tag.
type structTag struct {
	name              string
	skip              bool
	omitEmpty, inline bool
}

// parseTag reads a field's tag: ttldb, else bson, else a bare tag without
// a colon (as the MongoDB driver's default tag parser does).
func parseTag(sf reflect.StructField) structTag {
	tag, ok := sf.Tag.Lookup("ttldb")
	if !ok {
		tag, ok = sf.Tag.Lookup("bson")
	}
	if !ok && len(sf.Tag) > 0 && !strings.Contains(string(sf.Tag), ":") {
		tag = string(sf.Tag)
	}
	if tag == "-" {
		return structTag{skip: true}
	}
	var st structTag
	for i, part := range strings.Split(tag, ",") {
		if i == 0 {
			st.name = part
			continue
		}
		switch part {
		case "omitempty":
			st.omitEmpty = true
		case "inline":
			st.inline = true
		}
	}
	return st
}

// checkName applies the rules of a document's field names to a name a
// struct gives (see nameProblem: a '$'-prefixed or dotted name is stored,
// as DBRef's $ref and $id are).
func checkName(k string) string {
	if !utf8.ValidString(k) {
		return "field name is not valid UTF-8"
	}
	return ""
}

// typeProblem says why values of type t cannot be stored ("" if they
// can). Struct types are checked by their own plans, interfaces by the
// values they hold.
func typeProblem(t reflect.Type, depth int) string {
	if depth > MaxDepth {
		return ""
	}
	if t != timeType {
		switch encodeHookOf(t) {
		case hookNone:
		case hookRefused:
			return fmt.Sprintf("unsupported type %s (ttldb cannot store this BSON type)", t)
		default:
			return ""
		}
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String, reflect.Interface, reflect.Struct:
		return ""
	case reflect.Array:
		if isObjectIDLike(t) || t.Elem().Kind() == reflect.Uint8 {
			return ""
		}
	case reflect.Pointer, reflect.Slice:
		return typeProblem(t.Elem(), depth+1)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Sprintf("unsupported type %s (a map's keys must be strings)", t)
		}
		return typeProblem(t.Elem(), depth+1)
	}
	return fmt.Sprintf("unsupported type %s", t)
}

// field returns the field at index of struct v, or ok false when it lies
// behind a nil inline pointer.
func field(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// fieldForSet returns the field at index of addressable struct v,
// allocating nil inline pointers on the way.
func fieldForSet(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}
