package kernels_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/target"
)

// lowerTestKernels are the real kernels lower's own tests (which cannot import
// kernels: kernels asks lower for its figures) read as IR text from
// lower/testdata/kernels.
func lowerTestKernels(t *testing.T) map[string]*ir.Kernel {
	out := map[string]*ir.Kernel{}
	for _, g := range [][3]int{{17, 9, 33}, {100, 72, 448}} {
		k, err := kernels.GEMM(kernels.GEMMConfig{M: g[0], N: g[1], K: g[2], Out: ir.BF16})
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("gemm_%dx%dx%d", g[0], g[1], g[2])] = k
	}
	for _, tokens := range []int{1, 64} {
		c := mlaDefault()
		c.T = tokens
		p, err := kernels.MLA(c, target.MustLookup("sm_90"))
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("mla_decode_t%d", tokens)] = p.Kernels[0]
	}
	return out
}

// TestLowerTestdataKernels: lower/testdata/kernels holds the builders' IR of the
// kernels lower's tests compile (-update rewrites it).
func TestLowerTestdataKernels(t *testing.T) {
	for name, k := range lowerTestKernels(t) {
		path := filepath.Join("..", "lower", "testdata", "kernels", name+".ir")
		got := ir.Print(k)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./kernels -update writes it)", err)
		}
		if string(want) != got {
			t.Errorf("%s differs from the builder's IR: go test ./kernels -update rewrites it", path)
		}
	}
}
