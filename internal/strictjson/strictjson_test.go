package strictjson

import (
	"encoding/json"
	"strings"
	"testing"
)

type inner struct {
	K    int    `json:"K"`
	Name string `json:"name"`
}

type doc struct {
	Format string                     `json:"format"`
	T      int                        `json:"T"`
	Scale  float64                    `json:"sm_scale"`
	Sink   bool                       `json:"sink"`
	Tol    *struct{ Abs float64 }     `json:"tolerance"`
	Segs   []inner                    `json:"segments"`
	Grid   [3]int                     `json:"grid"`
	Args   map[string]json.RawMessage `json:"args"`
	N      json.Number                `json:"n"`
	Plain  int
}

// TestDecodeStrict: each leniency of encoding/json is refused, naming the key path,
// and what encoding/json would have done is said in the case's name.
func TestDecodeStrict(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"a key of another case, read as T", `{"t": 2}`, `unknown key t: keys are case-sensitive, did you mean "T"?`},
		{"a key in capitals, passing DisallowUnknownFields", `{"FORMAT": "x"}`, `unknown key FORMAT: keys are case-sensitive, did you mean "format"?`},
		{"a nested key of another case", `{"segments": [{"k": 1}]}`, `unknown key segments[0].k: keys are case-sensitive, did you mean "K"?`},
		{"an unknown key", `{"extra": 1}`, "unknown key extra (the keys of the top level are: Plain, T, args, format, grid, n, segments, sink, sm_scale, tolerance)"},
		{"null for a number, read as 0", `{"T": null}`, "T is null: want an integer"},
		{"null for a string", `{"format": null}`, "format is null: want a string"},
		{"null for a bool", `{"sink": null}`, "sink is null: want true or false"},
		{"null for a struct in an array", `{"segments": [null]}`, "segments[0] is null: want an object"},
		{"null for an array of 3", `{"grid": null}`, "grid is null: want an array of 3"},
		{"a quoted number for a json.Number", `{"n": "1000"}`, `n is the string "1000": want a number`},
		{"a quoted number for an int", `{"T": "2"}`, `T is the string "2": want an integer`},
		{"a key twice, the last kept", `{"T": 1, "T": 2}`, "T is given twice"},
		{"a map key twice", `{"args": {"n": 1, "n": 2}}`, "args.n is given twice"},
		{"a short array, padded with zeros", `{"grid": [1, 2]}`, "grid has 2 elements: want exactly 3"},
		{"a long array, cut", `{"grid": [1, 2, 3, 4]}`, "grid has more than 3 elements: want exactly 3"},
		{"more after the value", `{"T": 1} {"T": 2}`, "more data after the value"},
		{"not JSON", `{"T": 1`, "json: unexpected end of the data"},
		{"an object for a number", `{"T": {}}`, "T is an object: want an integer"},
		{"a number for a string", `{"format": 3}`, "format is the number 3: want a string"},
	} {
		var d doc
		err := Decode([]byte(c.doc), &d)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Decode(%s) = %v, want an error containing %q", c.name, c.doc, err, c.want)
		}
	}
}

// TestDecodeAccepts: what is well formed decodes as encoding/json decodes it, null
// included where the Go value can be nil (what is optional).
func TestDecodeAccepts(t *testing.T) {
	src := `{"format": "f", "T": 3, "sm_scale": 0.25, "sink": true, "tolerance": null,
		"segments": [{"K": 128, "name": "a"}, {"K": 7}], "grid": [1, 2, 3],
		"args": {"n": 1000, "alpha": [1, {"x": null}]}, "n": 12, "Plain": 5}`
	var got, want doc
	if err := Decode([]byte(src), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(src), &want); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) || got.T != 3 || got.Segs[1].K != 7 || got.Plain != 5 {
		t.Errorf("Decode gave %s, encoding/json %s", gb, wb)
	}
	var nils doc
	if err := Decode([]byte(`{"segments": null, "args": null, "tolerance": null}`), &nils); err != nil || nils.Segs != nil || nils.Args != nil || nils.Tol != nil {
		t.Errorf("null for a slice, a map and a pointer: %v, %+v", err, nils)
	}
	var list []inner
	if err := Decode([]byte(`[{"K": 1}]`), &list); err != nil || len(list) != 1 || list[0].K != 1 {
		t.Errorf("a top-level array: %v, %+v", err, list)
	}
	if err := Decode([]byte(`{}`), doc{}); err == nil {
		t.Errorf("Decode into a non-pointer: no error")
	}
}

// TestDecodeSubset: another program's output is read for some of its keys: the rest
// are skipped, at every depth, but a key of another case than the Go field's is not
// taken for it, and a null for a required field is still refused.
func TestDecodeSubset(t *testing.T) {
	var d doc
	if err := DecodeSubset([]byte(`{"T": 3, "extra": {"deep": [1, null]}, "segments": [{"K": 2, "more": null}]}`), &d); err != nil || d.T != 3 || d.Segs[0].K != 2 {
		t.Errorf("DecodeSubset with other keys: %v, %+v", err, d)
	}
	for _, c := range []struct{ doc, want string }{
		{`{"t": 3}`, `unknown key t: keys are case-sensitive, did you mean "T"?`},
		{`{"T": null}`, "T is null: want an integer"},
		{`{"n": "7"}`, `n is the string "7": want a number`},
	} {
		if err := DecodeSubset([]byte(c.doc), &d); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DecodeSubset(%s) = %v, want %q", c.doc, err, c.want)
		}
	}
}
