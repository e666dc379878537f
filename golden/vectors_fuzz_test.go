package golden

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadVectors writes a folder from meta (meta.json as given) and files of the
// sizes meta.json implies, each changed by a signed byte of sizes (0: exact), filled
// by cycling content, and loads it. Nothing may panic or hang; what loads must pass
// CheckInputs and have the reference outputs' lengths; a folder over a memory
// limit is refused. Seeds: testdata/fuzz/FuzzLoadVectors (the shared folders'
// meta.json files and a minimal bf16 one).
func FuzzLoadVectors(f *testing.F) {
	f.Add([]byte(`{"kernel":"mla_decode","T":1,"H":1,"nope":1,"rope":0,"cache":"bf16","segments":[{"K":1,"page_size":1,"page_stride":2,"pages":1,"cache":"c","idx":"i","len":"l"}],"valid_candidates_per_row":[0]}`), []byte{}, []byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, meta, sizes, content []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "meta.json"), meta, 0o644); err != nil {
			t.Fatal(err)
		}
		var m vectorMeta
		_ = json.Unmarshal(meta, &m) // a bad meta.json still gets the default files
		d := int64(m.Nope) + int64(m.Rope)
		files := []struct {
			name string
			dims []int64
		}{{"q.bf16", []int64{2, int64(m.T), int64(m.H), d}}, {"sink.f32", []int64{4, int64(m.H)}},
			{"out_ref.f64", []int64{8, int64(m.T), int64(m.H), d}}, {"lse_ref.f64", []int64{8, int64(m.T), int64(m.H)}}}
		for _, s := range m.Segments {
			files = append(files,
				struct {
					name string
					dims []int64
				}{s.CacheFile, []int64{1, int64(s.Pages), int64(s.PageStride)}},
				struct {
					name string
					dims []int64
				}{s.IdxFile, []int64{4, int64(m.T), int64(s.K)}},
				struct {
					name string
					dims []int64
				}{s.LenFile, []int64{4, int64(m.T)}})
		}
		const maxFile = 1 << 20
		for i, fl := range files {
			if fl.name == "" || fl.name != filepath.Base(fl.name) || fl.name == "meta.json" {
				continue
			}
			n := int64(1)
			for _, x := range fl.dims {
				if x < 0 || (x > 0 && n > maxFile/x) {
					n = maxFile + 1
					break
				}
				n *= x
			}
			if i < len(sizes) {
				n += int64(int8(sizes[i]))
			}
			if n < 0 || n > maxFile {
				continue // no such file, or too big to write: the loader must say so
			}
			b := make([]byte, n)
			for j := range b {
				if len(content) > 0 {
					b[j] = content[j%len(content)]
				}
			}
			if err := os.WriteFile(filepath.Join(dir, fl.name), b, 0o644); err != nil {
				continue // a name the file system refuses
			}
		}
		v, err := LoadVectors(dir)
		if err != nil {
			return
		}
		c := v.Config
		if err := c.CheckInputs(v.Inputs); err != nil {
			t.Fatalf("loaded a folder whose inputs fail CheckInputs: %v\nmeta.json: %s", err, meta)
		}
		if len(v.Out) != c.T*c.H*c.D() || len(v.LSE) != c.T*c.H {
			t.Fatalf("loaded %d outputs and %d LSEs for T=%d H=%d D=%d", len(v.Out), len(v.LSE), c.T, c.H, c.D())
		}
		if _, err := LoadVectorsLimit(dir, 1); err == nil {
			t.Fatalf("LoadVectorsLimit(1 byte) loaded %s", meta)
		}
		if _, err := LoadVectorsLimit(dir, math.MaxInt64); err != nil {
			t.Fatalf("LoadVectorsLimit(max) refused what LoadVectors loaded: %v", err)
		}
	})
}
