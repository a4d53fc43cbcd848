package engine

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// encodeOutput encodes a flow's output. JSON has no NaN or ±Inf, and encoding/json only
// says which value it met, not where: an output holding one is answered as InternalError
// whose data names the field ({message, path}), and logged with the flow, so the report
// points at the bug rather than at "internal error".
func (a *App) encodeOutput(ctx context.Context, def *FlowDef, out any) ([]byte, error) {
	data, err := json.Marshal(out)
	if err == nil {
		return data, nil
	}
	var uv *json.UnsupportedValueError
	if !errors.As(err, &uv) || !uv.Value.IsValid() || (uv.Value.Kind() != reflect.Float32 && uv.Value.Kind() != reflect.Float64) {
		return nil, fmt.Errorf("encoding output of %s: %w", def.ID(), err)
	}
	path, found := nonFinitePath(reflect.ValueOf(out), "", 0)
	var msg string
	switch {
	case !found: // behind a MarshalJSON method, out of sight
		msg = "the output holds " + uv.Str + ", which JSON cannot carry"
	case path == "":
		msg = "the output is " + uv.Str + ", which JSON cannot carry"
	default:
		msg = "output field " + path + " is " + uv.Str + ", which JSON cannot carry"
	}
	a.logger.ErrorContext(ctx, "engine: flow output holds a number JSON cannot carry", "flow", def.ID(), "path", path, "value", uv.Str)
	return nil, NewError(CodeInternal, map[string]any{"message": msg, "path": path})
}

// maxOutputDepth bounds the search for a non-finite number, so a cyclic output (which
// encoding/json reports on its own) cannot loop it.
const maxOutputDepth = 200

// nonFinitePath finds the first NaN or ±Inf in v in the order encoding/json meets it, and
// returns its path in the form of [ValidationIssue.Path] ("a.b[0]", JSON member names).
func nonFinitePath(v reflect.Value, path string, depth int) (string, bool) {
	if depth > maxOutputDepth || !v.IsValid() {
		return "", false
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		return path, math.IsNaN(f) || math.IsInf(f, 0)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "", false
		}
		return nonFinitePath(v.Elem(), path, depth+1)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return "", false // []byte is base64 text
		}
		for i := range v.Len() {
			if p, ok := nonFinitePath(v.Index(i), path+"["+strconv.Itoa(i)+"]", depth+1); ok {
				return p, true
			}
		}
	case reflect.Map:
		keys := make([]string, 0, v.Len())
		byName := make(map[string]reflect.Value, v.Len())
		for it := v.MapRange(); it.Next(); {
			name := mapKeyName(it.Key())
			keys = append(keys, name)
			byName[name] = it.Value()
		}
		slices.Sort(keys) // encoding/json writes members in this order
		for _, k := range keys {
			if p, ok := nonFinitePath(byName[k], join(path, k), depth+1); ok {
				return p, true
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
				// Embedded without a name: its fields are promoted to this object.
				if p, ok := nonFinitePath(v.Field(i), path, depth+1); ok {
					return p, true
				}
				continue
			}
			if !f.IsExported() && !(f.Anonymous && ft.Kind() == reflect.Struct) {
				// encoding/json skips an unexported field, but writes an embedded
				// struct of an unexported type given a name as that member.
				continue
			}
			if name == "" {
				name = f.Name
			}
			if p, ok := nonFinitePath(v.Field(i), join(path, name), depth+1); ok {
				return p, true
			}
		}
	}
	return "", false
}

// mapKeyName is a map key as encoding/json writes it.
func mapKeyName(k reflect.Value) string {
	if k.Kind() == reflect.String {
		return k.String()
	}
	if !k.CanInterface() {
		return fmt.Sprint(k)
	}
	if tm, ok := k.Interface().(encoding.TextMarshaler); ok {
		if b, err := tm.MarshalText(); err == nil {
			return string(b)
		}
	}
	switch k.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(k.Uint(), 10)
	}
	return fmt.Sprint(k.Interface())
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
