package check

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
)

// One mla_decode generated for a capacity of 8 rows runs calls of 1, 3 and 8 rows
// (and 0) against the float64 reference, split and unsplit: the rows are an
// argument, so the PTX must be the same bytes whatever the call's rows are.
func TestMLARowsAtRunTime(t *testing.T) {
	segs := []mla.Segment{seg(63, 53, true), seg(40, 16, true)}
	for _, split := range []int{1, 3} {
		var ptx0 string
		for _, rows := range []int{1, 3, 8} {
			cfg := kernels.MLAConfig{Shape: mla.Shape{T: rows, MaxT: 8, H: 8, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true, Segments: segs}, Split: split}
			opt := golden.MLAGenOptions{Seed: uint64(100*split + rows), InvalidFrac: 0.1, Poison: true}
			c, err := MLA(cfg, tgt("sm_90"), opt)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(c.Compiled.Kernels); got != map[int]int{1: 1, 3: 2}[split] {
				t.Fatalf("split %d: %d kernels", split, got)
			}
			for _, k := range c.Compiled.Kernels {
				if g := k.GridFor(rows, split); k.MaxRows() != 8 || g[1] != rows || !strings.HasPrefix(k.Name, "mla_combine") && g[2] != split {
					t.Fatalf("%s: capacity %d, grid %v for %d rows split %d; want capacity 8", k.Name, k.MaxRows(), g, rows, split)
				}
			}
			if text := c.Compiled.Module.Print(); ptx0 == "" {
				ptx0 = text
			} else if text != ptx0 {
				t.Fatalf("split %d: the PTX for a call of %d rows differs from the 1-row call's", split, rows)
			}
			res, err := Run(Emulator{}, c)
			if err != nil {
				t.Fatalf("split %d rows %d (seed %d): %v", split, rows, opt.Seed, err)
			}
			if !res.OK() {
				t.Errorf("split %d rows %d (seed %d):\n%s", split, rows, opt.Seed, res)
			}
			if rows != 3 {
				continue
			}
			// Zero rows: nothing runs, every output keeps its poison.
			c.Scalars["rows"] = int32(0)
			final, err := Emulator{}.Run(c)
			if err != nil {
				t.Fatalf("split %d, 0 rows: %v", split, err)
			}
			for _, name := range []string{"out", "lse"} {
				if !bytes.Equal(final[name], c.Buffers[name]) || c.Buffers[name][0] != 0xFF {
					t.Errorf("split %d, 0 rows: %s was written", split, name)
				}
			}
			c.Scalars["rows"] = int32(9)
			if _, err := (Emulator{}).Run(c); err == nil {
				t.Errorf("split %d: 9 rows on a capacity of 8 ran", split)
			}
		}
	}
}
