package kernels

import (
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
)

// GEMMStages(c, 1) is GEMM(c), so gemm's PTX is unchanged; other depths mark the K
// loop, and depths outside 1..4 are refused naming the range.
func TestGEMMStages(t *testing.T) {
	c := GEMMConfig{M: 100, N: 72, K: 448, Out: ir.BF16}
	plain, err := GEMM(c)
	if err != nil {
		t.Fatal(err)
	}
	one, err := GEMMStages(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ir.Print(one) != ir.Print(plain) {
		t.Errorf("GEMMStages(c, 1) differs from GEMM(c)")
	}
	three, err := GEMMStages(c, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ir.Print(three), "step 1 stages 3 iter(") {
		t.Errorf("stages 3: the K loop is not marked:\n%s", ir.Print(three))
	}
	for _, n := range []int{0, 5} {
		_, err := GEMMStages(c, n)
		if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), "want an integer in 1..4") {
			t.Errorf("stages %d: got %v, want a configuration error naming 1..4", n, err)
		}
	}
}
