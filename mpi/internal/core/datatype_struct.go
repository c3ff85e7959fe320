package core

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/gompix/gompix/internal/dtype"
)

// goLayout is the layout of Go type rt (at path, for errors): numbers map
// to their basic types, arrays to contiguous runs, structs to their fields
// at reflection's offsets with the Go type's own size as extent.
func goLayout(rt reflect.Type, path string) (*dtype.Layout, error) {
	if t, ok := goBasic(rt); ok {
		return dtype.Basic(t), nil
	}
	switch rt.Kind() {
	case reflect.Array:
		el, err := goLayout(rt.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return dtype.Contiguous(rt.Len(), el)
	case reflect.Struct:
		var fs []dtype.Field
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			if f.Name == "_" {
				continue
			}
			fl, err := goLayout(f.Type, path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			fs = append(fs, dtype.Field{Offset: int64(f.Offset), Count: 1, Type: fl})
		}
		l, err := dtype.Struct(fs)
		if err != nil {
			return nil, err
		}
		return dtype.Resized(l, 0, int64(rt.Size()))
	}
	return nil, fmt.Errorf("%s is a %v: only numbers, arrays and structs of them can be sent", path, rt)
}

// faceFloat16 is the package path and name of package mpi's Float16, which
// core cannot name: any other uint16 type reflects as uint16.
var faceFloat16 = strings.TrimSuffix(reflect.TypeFor[Float16]().PkgPath(), "/internal/core")

// goBasic maps a Go number type (named or not) to its basic type.
func goBasic(rt reflect.Type) (dtype.Type, bool) {
	switch rt {
	case reflect.TypeFor[Float16]():
		return dtype.Float16, true
	case reflect.TypeFor[BFloat16](), reflect.TypeOf(bhalf):
		return dtype.BFloat16, true
	}
	if rt.Kind() == reflect.Uint16 && rt.Name() == "Float16" && rt.PkgPath() == faceFloat16 {
		return dtype.Float16, true
	}
	ints := [...]dtype.Type{1: dtype.Int8, 2: dtype.Int16, 4: dtype.Int32, 8: dtype.Int64}
	uints := [...]dtype.Type{1: dtype.Uint8, 2: dtype.Uint16, 4: dtype.Uint32, 8: dtype.Uint64}
	switch rt.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return ints[rt.Size()], true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return uints[rt.Size()], true
	case reflect.Float32:
		return dtype.Float32, true
	case reflect.Float64:
		return dtype.Float64, true
	case reflect.Complex64:
		return dtype.Complex64, true
	case reflect.Complex128:
		return dtype.Complex128, true
	}
	return 0, false
}

// plainData reports whether values of rt hold no pointers (nothing the
// garbage collector must see), so that bytes from a message may be stored
// into them.
func plainData(rt reflect.Type) bool {
	switch rt.Kind() {
	case reflect.Array:
		return rt.Len() == 0 || plainData(rt.Elem())
	case reflect.Struct:
		for i := 0; i < rt.NumField(); i++ {
			if !plainData(rt.Field(i).Type) {
				return false
			}
		}
		return true
	case reflect.Pointer, reflect.UnsafePointer, reflect.Slice, reflect.String, reflect.Map,
		reflect.Interface, reflect.Chan, reflect.Func:
		return false
	}
	return true
}
