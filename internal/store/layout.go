package store

import "reflect"

// HasPointers reports whether values of t hold Go pointers (pointers,
// slices, maps, strings, interfaces, channels, funcs), which the garbage
// collector must scan. The record layout types of the engine must not.
func HasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.UnsafePointer, reflect.Slice, reflect.Map, reflect.String,
		reflect.Interface, reflect.Chan, reflect.Func:
		return true
	case reflect.Array:
		return t.Len() > 0 && HasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if HasPointers(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}
