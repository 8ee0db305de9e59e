package main

import (
	"encoding"
	"encoding/json"
	"reflect"
	"sync"
	"time"
)

// nullTimes returns v for printing as JSON or YAML with every zero time.Time as null.
//
// The SDK decodes the API's null times (a partition's oldestMessage when it is empty, a lease's
// expiry when there is none, …) into zero time.Time values, which encoding/json writes as
// "0001-01-01T00:00:00Z": a date the broker never sent and a script would take for a real one.
// queenctl prints what the API says instead. The SDK's types stay as they are (changing their
// fields to *time.Time would break every program using them); v is copied into a mirror type,
// built once per type with reflect.StructOf, whose time.Time fields are *time.Time with the same
// JSON names, tags and order, so the output differs from json.Marshal(v) only there.
func nullTimes(v any) (out any) {
	if v == nil {
		return nil
	}
	// A type reflect.StructOf cannot mirror is printed as json.Marshal writes it: a zero time
	// shown as such is better than a command that prints nothing.
	defer func() {
		if recover() != nil {
			out = v
		}
	}()
	rv := reflect.ValueOf(v)
	m := mirror(rv.Type())
	if !m.walk {
		return v // no time.Time can be inside: nothing to copy
	}
	return convert(rv, m.t).Interface()
}

var (
	timeType       = reflect.TypeFor[time.Time]()
	marshalerType  = reflect.TypeFor[json.Marshaler]()
	textMarshaler  = reflect.TypeFor[encoding.TextMarshaler]()
	mirrors        sync.Map // reflect.Type → mirrored
	mirroringMutex sync.Mutex
)

// mirrored is the type nullTimes copies a value into, and whether a value must be walked at
// all: its type differs, or it holds an empty interface, whose contents are known only then.
type mirrored struct {
	t    reflect.Type
	walk bool
}

// mirror returns the mirror of t: t itself when t holds no time.Time that encoding/json would
// reach, or when t marshals itself.
func mirror(t reflect.Type) mirrored {
	if m, ok := mirrors.Load(t); ok {
		return m.(mirrored)
	}
	mirroringMutex.Lock()
	defer mirroringMutex.Unlock()
	return mirrorLocked(t, map[reflect.Type]bool{})
}

func mirrorLocked(t reflect.Type, visiting map[reflect.Type]bool) mirrored {
	if m, ok := mirrors.Load(t); ok {
		return m.(mirrored)
	}
	if visiting[t] {
		return mirrored{t: t} // a recursive type is printed as it is rather than mirrored forever
	}
	visiting[t] = true
	defer delete(visiting, t)
	m := build(t, visiting)
	m.walk = m.walk || m.t != t
	mirrors.Store(t, m)
	return m
}

func build(t reflect.Type, visiting map[reflect.Type]bool) mirrored {
	if t == timeType {
		return mirrored{t: reflect.PointerTo(timeType)}
	}
	// A type with its own marshaling (json.RawMessage, a custom enum) is written by its method.
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return mirrored{t: t}
	}
	switch t.Kind() {
	case reflect.Interface:
		// An empty interface (map[string]any) may hold anything; a non-empty one must keep its
		// methods, so its value is printed as it is.
		return mirrored{t: t, walk: t.NumMethod() == 0}
	case reflect.Pointer:
		e := mirrorLocked(t.Elem(), visiting)
		if e.t != t.Elem() {
			return mirrored{t: reflect.PointerTo(e.t)}
		}
		return mirrored{t: t, walk: e.walk}
	case reflect.Slice:
		e := mirrorLocked(t.Elem(), visiting)
		if e.t != t.Elem() {
			return mirrored{t: reflect.SliceOf(e.t)}
		}
		return mirrored{t: t, walk: e.walk}
	case reflect.Array:
		e := mirrorLocked(t.Elem(), visiting)
		if e.t != t.Elem() {
			return mirrored{t: reflect.ArrayOf(t.Len(), e.t)}
		}
		return mirrored{t: t, walk: e.walk}
	case reflect.Map:
		e := mirrorLocked(t.Elem(), visiting)
		if e.t != t.Elem() {
			return mirrored{t: reflect.MapOf(t.Key(), e.t)}
		}
		return mirrored{t: t, walk: e.walk}
	case reflect.Struct:
		return mirrorStruct(t, visiting)
	}
	return mirrored{t: t}
}

// mirrorStruct keeps every field encoding/json writes, in order and with its tag; unexported
// fields, which it never writes, are left out (reflect.StructOf refuses them). An embedded
// struct keeps its place, so its fields are still promoted; a struct that embeds an unexported
// type (whose exported fields encoding/json would promote) or a type with methods (which
// reflect.StructOf cannot embed) is left as it is.
func mirrorStruct(t reflect.Type, visiting map[reflect.Type]bool) mirrored {
	var fields []reflect.StructField
	changed, walk := false, false
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			if f.Anonymous {
				return mirrored{t: t}
			}
			continue
		}
		m := mirrorLocked(f.Type, visiting)
		walk = walk || m.walk
		if m.t != f.Type {
			f.Type = m.t
			changed = true
		} else if f.Anonymous && (f.Type.NumMethod() > 0 || f.Type.Kind() != reflect.Pointer && reflect.PointerTo(f.Type).NumMethod() > 0) {
			return mirrored{t: t} // reflect.StructOf cannot embed a type with methods
		}
		f.Index, f.Offset = nil, 0
		fields = append(fields, f)
	}
	if !changed {
		if walk {
			// Same layout, but an empty interface inside may hold a time: copied field by
			// field into a struct without the unexported fields.
			return mirrored{t: reflect.StructOf(fields), walk: true}
		}
		return mirrored{t: t}
	}
	return mirrored{t: reflect.StructOf(fields), walk: true}
}

// convert copies v into a value of its mirror type mt.
func convert(v reflect.Value, mt reflect.Type) reflect.Value {
	if v.Kind() == reflect.Interface {
		if v.IsNil() || v.Type().NumMethod() != 0 {
			return v
		}
		e := v.Elem()
		out := reflect.New(mt).Elem()
		out.Set(convert(e, mirror(e.Type()).t))
		return out
	}
	if mt == v.Type() && !mirror(mt).walk {
		return v
	}
	switch {
	case v.Type() == timeType:
		if t := v.Interface().(time.Time); !t.IsZero() {
			return reflect.ValueOf(&t)
		}
		return reflect.Zero(mt)
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			return reflect.Zero(mt)
		}
		p := reflect.New(mt.Elem())
		p.Elem().Set(convert(v.Elem(), mt.Elem()))
		return p
	case v.Kind() == reflect.Slice:
		if v.IsNil() {
			return reflect.Zero(mt) // null stays null, [] stays []
		}
		out := reflect.MakeSlice(mt, v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(convert(v.Index(i), mt.Elem()))
		}
		return out
	case v.Kind() == reflect.Array:
		out := reflect.New(mt).Elem()
		for i := range v.Len() {
			out.Index(i).Set(convert(v.Index(i), mt.Elem()))
		}
		return out
	case v.Kind() == reflect.Map:
		if v.IsNil() {
			return reflect.Zero(mt)
		}
		out := reflect.MakeMapWithSize(mt, v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), convert(it.Value(), mt.Elem()))
		}
		return out
	case v.Kind() == reflect.Struct:
		out := reflect.New(mt).Elem()
		j := 0
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			out.Field(j).Set(convert(v.Field(i), mt.Field(j).Type))
			j++
		}
		return out
	}
	return v
}
