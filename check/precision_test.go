package check

import (
	"bytes"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
)

// precisionRun runs c in the emulator and returns its reports with the largest
// excess of out's error over the spec's relative term (max |got-want| -
// 2.01/128 |want|, the abs the spec would need) and the elements outside the spec.
func precisionRun(t *testing.T, c *Case, wantOut func() []float64) (out, lse golden.Report, excess float64, outside int) {
	t.Helper()
	cmp := c.Compare
	c.Compare = func(final map[string][]byte) []golden.Report {
		spec := golden.MLAOutTolerance
		for i, w := range wantOut() {
			g := float64(math.Float32frombits(uint32(u16s(final["out"])[i]) << 16))
			d := math.Abs(g - w)
			if math.IsInf(w, 0) {
				continue
			}
			excess = max(excess, d-spec.Rel*math.Abs(w))
			if d > spec.Abs+spec.Rel*math.Abs(w) {
				outside++
			}
		}
		return cmp(final)
	}
	res, err := Run(Emulator{}, c)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Errorf("%s", res)
	}
	return res.Reports[0], res.Reports[1], excess, outside
}

// TestPrecisionVectors holds each precision to its tolerance on every test-vector
// folder (mlaCase picks it: MLATolerances) and logs the table DESIGN.md
// ("Precisions") shows; exact's error is never above bf16p's.
func TestPrecisionVectors(t *testing.T) {
	var table strings.Builder
	const copied, shared = "../golden/testdata/vectors/mla_decode", "../../shared/testvectors/mla_decode"
	roots := []string{copied}
	if !sameTree(t, copied, shared) {
		roots = append(roots, shared) // the same files measure the same: run a copy once
	}
	for _, root := range roots {
		dirs, _ := filepath.Glob(root + "/*")
		if len(dirs) == 0 {
			t.Fatalf("no test vectors in %s", root)
		}
		fmt.Fprintf(&table, "%s\n| folder | precision | out max abs | out max rel | out rel L2 | out outside spec | lse max abs | lse rel L2 |\n", root)
		for _, d := range dirs {
			v, err := golden.LoadVectors(d)
			if err != nil {
				t.Fatal(err)
			}
			var prev golden.Report
			var prevOutside int
			for _, p := range []kernels.MLAPrecision{kernels.PrecisionExact, kernels.PrecisionBF16P} {
				c, err := Vectors(d, tgt("sm_90"), kernels.MLAConfig{Precision: p}, 0)
				if err != nil {
					t.Fatal(err)
				}
				o, l, _, outside := precisionRun(t, c, func() []float64 { return v.Out })
				fmt.Fprintf(&table, "| %s | %s | %.2e | %.2e | %.2e | %d of %d | %.2e | %.2e |\n", filepath.Base(d), p, o.MaxAbs, o.MaxRel, o.RelL2, outside, o.N, l.MaxAbs, l.RelL2)
				if p == kernels.PrecisionExact {
					prev, prevOutside = o, outside
				} else if prev.MaxRel > o.MaxRel || prev.RelL2 > o.RelL2 || prevOutside > outside {
					t.Errorf("%s: exact (max rel %.3g, rel L2 %.3g, %d outside the spec) is looser than bf16p (%.3g, %.3g, %d)", d, prev.MaxRel, prev.RelL2, prevOutside, o.MaxRel, o.RelL2, outside)
				}
			}
		}
	}
	t.Logf("\n%s", table.String())
}

// sameTree reports whether folder b exists and holds the files of a, byte for byte.
func sameTree(t *testing.T, a, b string) bool {
	if _, err := os.Stat(b); err != nil {
		t.Logf("%s: %v (beside the repository, not in it)", b, err)
		return true
	}
	same := true
	err := filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		x, errA := os.ReadFile(p)
		y, errB := os.ReadFile(filepath.Join(b, rel))
		same = same && errA == nil && errB == nil && bytes.Equal(x, y)
		return nil
	})
	return err == nil && same
}

// TestPrecisionSeeded: on seeded random inputs (a 64-head two-segment call,
// split and unsplit) bf16p stays within its own tolerance, exact within the
// spec's, and exact is tighter: its largest excess over the spec's relative term
// is below bf16p's, and so is its rel L2.
func TestPrecisionSeeded(t *testing.T) {
	for _, tc := range []struct {
		seed        uint64
		T, H, split int
	}{{21, 1, 64, 1}, {22, 2, 16, 0}} {
		{
			seed, split := tc.seed, tc.split
			shape := mla.Shape{T: tc.T, H: tc.H, Nope: mla.FP8DSNope, Rope: mla.FP8DSRope, Cache: mla.CacheFP8DS, Sink: true,
				Segments: []mla.Segment{{K: 192, PageSize: 64, HasLen: true}, {K: 320, PageSize: 32, HasLen: true}}}
			var excess [2]float64
			var relL2 [2]float64
			for i, p := range []kernels.MLAPrecision{kernels.PrecisionExact, kernels.PrecisionBF16P} {
				cfg := kernels.MLAConfig{Shape: shape, Split: split, Precision: p}
				c, err := MLA(cfg, tgt("sm_90"), golden.MLAGenOptions{Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				g := golden.PackedMLAConfig(shape, golden.MLAPoolPages(shape))
				in, err := golden.GenMLA(g, golden.MLAGenOptions{Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				want, _, err := golden.MLADecode(g, in)
				if err != nil {
					t.Fatal(err)
				}
				var o golden.Report
				o, _, excess[i], _ = precisionRun(t, c, func() []float64 { return want })
				relL2[i] = o.RelL2
				if want := golden.MLAOutToleranceBF16P.MaxRelL2; o.RelL2 > want {
					t.Errorf("seed %d split %d %s: out rel L2 %.3g above bf16p's limit %.3g", seed, split, p, o.RelL2, want)
				}
			}
			t.Logf("seed %d split %d: excess over the spec's rel term exact %.3g bf16p %.3g; rel L2 exact %.4g bf16p %.4g", seed, split, excess[0], excess[1], relL2[0], relL2[1])
			if excess[0] >= excess[1] || relL2[0] > relL2[1] {
				t.Errorf("seed %d split %d: exact is not tighter than bf16p: excess %.3g vs %.3g, rel L2 %.4g vs %.4g", seed, split, excess[0], excess[1], relL2[0], relL2[1])
			}
		}
	}
}
