// Package strictjson is the one JSON reader of the project's files (vector folders'
// meta.json, launch manifests, benchmark baselines). encoding/json is lenient where
// a misspelt file should be refused: it matches keys case-insensitively ("t": 2
// sets T, "FORMAT" passes DisallowUnknownFields), turns null into a zero value, lets
// json.Number read a quoted number, keeps the last of two equal keys and pads or
// cuts arrays to their Go length. Decode refuses each of those, naming the key path.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
)

// Decode reads data, which must hold exactly one JSON value, into v (a non-nil
// pointer) after checking it against v's type:
//   - an object's keys are its struct's field names exactly (the json tag, or the Go
//     name), each once; a map's keys each once;
//   - null only where the Go value can be nil (a pointer, slice, map or interface:
//     what is optional), never for a string, number, bool, struct or array;
//   - numbers are JSON numbers, also for a json.Number (never quoted);
//   - an array has exactly the elements of a Go array.
//
// Then encoding/json decodes it (with DisallowUnknownFields), so its own errors
// (a number out of range, a string for a number) still apply.
func Decode(data []byte, v any) error { return decode(data, v, false) }

// DecodeSubset is Decode for another program's output, of which v names some keys:
// keys v does not name are skipped, but a key that differs from one of v's only in
// case is still refused, and so is everything else Decode refuses.
func DecodeSubset(data []byte, v any) error { return decode(data, v, true) }

func decode(data []byte, v any, subset bool) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("strictjson: Decode of a non-pointer %T", v)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	c := checker{dec: dec, subset: subset}
	if err := c.value(rv.Type().Elem(), ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("json: more data after the value")
	}
	std := json.NewDecoder(bytes.NewReader(data))
	if !subset {
		std.DisallowUnknownFields()
	}
	return std.Decode(v)
}

type checker struct {
	dec    *json.Decoder
	subset bool // skip keys the Go type does not name (DecodeSubset)
}

var (
	numberType    = reflect.TypeFor[json.Number]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	unmarshalType = reflect.TypeFor[json.Unmarshaler]()
)

// where names a key path for messages: the top level, or "segments[0].K".
func where(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

// value reads one JSON value and checks it against t.
func (c *checker) value(t reflect.Type, path string) error {
	tok, err := c.dec.Token()
	if err != nil {
		return jsonError(err)
	}
	return c.valueFrom(tok, t, path)
}

func jsonError(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("json: unexpected end of the data")
	}
	return fmt.Errorf("json: %v", err)
}

func (c *checker) valueFrom(tok json.Token, t reflect.Type, path string) error {
	if tok == nil { // null
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			return nil
		}
		return fmt.Errorf("json: %s is null: want %s", where(path), kindName(t))
	}
	if t == rawType || t.Kind() == reflect.Interface {
		return c.skip(tok)
	}
	if t.Kind() == reflect.Pointer {
		return c.valueFrom(tok, t.Elem(), path)
	}
	if t.Implements(unmarshalType) || reflect.PointerTo(t).Implements(unmarshalType) {
		return c.skip(tok) // the type reads itself
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			switch t.Kind() {
			case reflect.Struct:
				return c.object(t, path)
			case reflect.Map:
				return c.mapObject(t, path)
			}
		case '[':
			switch t.Kind() {
			case reflect.Slice, reflect.Array:
				return c.array(t, path)
			}
		}
		return fmt.Errorf("json: %s is %s: want %s", where(path), delimName(tok), kindName(t))
	case json.Number:
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64:
			return nil
		}
		if t == numberType {
			return nil
		}
		return fmt.Errorf("json: %s is the number %s: want %s", where(path), tok, kindName(t))
	case string:
		if t.Kind() == reflect.String && t != numberType {
			return nil
		}
		return fmt.Errorf("json: %s is the string %q: want %s", where(path), tok, kindName(t))
	case bool:
		if t.Kind() == reflect.Bool {
			return nil
		}
		return fmt.Errorf("json: %s is %v: want %s", where(path), tok, kindName(t))
	}
	return fmt.Errorf("json: %s: unexpected %v", where(path), tok)
}

// object checks an object's keys against struct t's fields, and each value.
func (c *checker) object(t reflect.Type, path string) error {
	fields := fieldsOf(t)
	seen := map[string]bool{}
	for c.dec.More() {
		key, err := c.key(path)
		if err != nil {
			return err
		}
		at := join(path, key)
		if seen[key] {
			return fmt.Errorf("json: %s is given twice", at)
		}
		seen[key] = true
		f, ok := fields[key]
		if !ok {
			hint := caseHint(fields, key)
			if c.subset && hint == "" {
				tok, err := c.dec.Token()
				if err != nil {
					return jsonError(err)
				}
				if err := c.skip(tok); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("json: unknown key %s%s (the keys of %s are: %s)", at, hint, where(path), strings.Join(slices.Sorted(mapKeys(fields)), ", "))
		}
		if err := c.value(f, at); err != nil {
			return err
		}
	}
	return c.end()
}

func (c *checker) mapObject(t reflect.Type, path string) error {
	seen := map[string]bool{}
	for c.dec.More() {
		key, err := c.key(path)
		if err != nil {
			return err
		}
		at := join(path, key)
		if seen[key] {
			return fmt.Errorf("json: %s is given twice", at)
		}
		seen[key] = true
		if err := c.value(t.Elem(), at); err != nil {
			return err
		}
	}
	return c.end()
}

func (c *checker) array(t reflect.Type, path string) error {
	n := 0
	for c.dec.More() {
		if t.Kind() == reflect.Array && n >= t.Len() {
			return fmt.Errorf("json: %s has more than %d elements: want exactly %d", where(path), t.Len(), t.Len())
		}
		if err := c.value(t.Elem(), fmt.Sprintf("%s[%d]", path, n)); err != nil {
			return err
		}
		n++
	}
	if t.Kind() == reflect.Array && n != t.Len() {
		return fmt.Errorf("json: %s has %d elements: want exactly %d", where(path), n, t.Len())
	}
	return c.end()
}

// end reads the '}' or ']' that closes an object or array.
func (c *checker) end() error {
	if _, err := c.dec.Token(); err != nil {
		return jsonError(err)
	}
	return nil
}

func (c *checker) key(path string) (string, error) {
	tok, err := c.dec.Token()
	if err != nil {
		return "", jsonError(err)
	}
	key, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("json: %s: a key is not a string", where(path))
	}
	return key, nil
}

// skip reads the rest of a value whose first token was tok.
func (c *checker) skip(tok json.Token) error {
	d, ok := tok.(json.Delim)
	if !ok || (d != '{' && d != '[') {
		return nil
	}
	for depth := 1; depth > 0; {
		tok, err := c.dec.Token()
		if err != nil {
			return jsonError(err)
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// fieldsOf maps struct t's JSON keys to their types, as encoding/json names them: the
// json tag's name, else the Go name; untagged embedded structs lend their fields.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && !strings.HasPrefix(tag, "-,") {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				continue // its fields are visible on their own
			}
		}
		if !f.IsExported() {
			continue
		}
		if len(f.Index) > 1 && !promoted(t, f) {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := out[name]; !dup {
			out[name] = f.Type
		}
	}
	return out
}

// promoted reports whether f, a field of an embedded struct, is promoted to t by
// encoding/json: every struct on its path is embedded without a name.
func promoted(t reflect.Type, f reflect.StructField) bool {
	for i := range f.Index[:len(f.Index)-1] {
		sf := t.FieldByIndex(f.Index[:i+1])
		if name, _, _ := strings.Cut(sf.Tag.Get("json"), ","); name != "" {
			return false
		}
	}
	return true
}

// caseHint suggests the key that differs from key only in case.
func caseHint(fields map[string]reflect.Type, key string) string {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return fmt.Sprintf(": keys are case-sensitive, did you mean %q?", name)
		}
	}
	return ""
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func mapKeys(m map[string]reflect.Type) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func delimName(d json.Delim) string {
	if d == '{' {
		return "an object"
	}
	return "an array"
}

// kindName says what a Go type accepts, for messages.
func kindName(t reflect.Type) string {
	if t == numberType {
		return "a number"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice:
		return "an array"
	case reflect.Array:
		return fmt.Sprintf("an array of %d", t.Len())
	case reflect.Pointer:
		return kindName(t.Elem()) + " or null"
	}
	return t.String()
}
