package lower

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/target"
)

// attentionTile is one tile of attention written plainly: scores = q · kᵀ over
// chunks of 64 (a chain of dots), row softmax, then P · v normalized. In a launch
// that is not latency-bound, with rows = 16 and 4 warps, layout splits the score
// dots along their reduction (each warp 16 of each chunk's 64) and all-reduces
// the partial scores; the softmax then stays inside each warp and P feeds the
// second dot from registers.
func attentionTile(rows, cands, chunks, warps int, latency ir.Latency) *ir.Builder {
	const w = 64
	d := chunks * w
	b := ir.NewBuilder("attention_tile")
	q := b.Param("q", ir.PtrTo(ir.BF16), 16, int64(2*rows*d))
	k := b.Param("k", ir.PtrTo(ir.BF16), 16, int64(2*cands*d))
	y := f32Param(b, "y", rows*w)
	b.SetWarps(warps)
	b.SetGrid(1, 1, 1)
	b.SetLatency(latency)
	qRows := b.Mul(b.Cast(b.Iota(rows), ir.I64), b.I64(int64(d)))
	kRows := b.Mul(b.Cast(b.Iota(cands), ir.I64), b.I64(int64(d)))
	s := b.ConstFloat(0, ir.TileOf(ir.F32, rows, cands))
	var v *ir.Value
	for c := 0; c < chunks; c++ {
		qc := b.Load2(q, qRows, b.I64(int64(c*w)), w, nil, nil)
		kc := b.Load2(k, kRows, b.I64(int64(c*w)), w, nil, nil)
		if c == 0 {
			v = kc
		}
		s = b.Dot(qc, b.Trans(kc), s)
	}
	m := b.Reduce("max", s, 1)
	p := b.Exp2(b.Sub(s, b.Broadcast(m, 1, rows, cands)))
	l := b.Reduce("sum", p, 1)
	o := b.Dot(b.Cast(p, ir.BF16), v, b.ConstFloat(0, ir.TileOf(ir.F32, rows, w)))
	o = b.Div(o, b.Broadcast(l, 1, rows, w))
	b.Store2(y, b.Mul(b.Cast(b.Iota(rows), ir.I64), b.I64(w)), b.I64(0), nil, nil, o)
	return b
}

// attentionInputs are attentionTile's q and k, random bf16 from seed, and its
// float64 output (P rounded to bf16 as the kernel's second dot takes it).
func attentionInputs(seed uint64, rows, cands, chunks int) (qb, kb []byte, want []float64) {
	rng := rand.New(rand.NewPCG(seed, 9))
	d := chunks * 64
	qb, qv := randomBF16(rng, rows*d, 0.5)
	kb, kv := randomBF16(rng, cands*d, 0.5)
	// v is k's first 64 columns.
	return qb, kb, softmaxRows(qv, kv, kv, rows, cands, d, 64, d, true)
}

// TestSplitDotAllReduce runs attentionTile in the emulator against float64, split
// (large launch) and computed whole by every warp (small launch), and checks that
// the large launch's scores were split and all-reduced.
func TestSplitDotAllReduce(t *testing.T) {
	const rows, cands, chunks = 16, 32, 3
	for i, c := range []struct {
		latency ir.Latency
		split   bool
	}{{ir.LatencyLarge, true}, {ir.LatencySmall, false}} {
		t.Run(map[bool]string{true: "split", false: "whole"}[c.split], func(t *testing.T) {
			seed := uint64(900 + i)
			qb, kb, want := attentionInputs(seed, rows, cands, chunks)
			b := attentionTile(rows, cands, chunks, 4, c.latency)
			got, pk := runUserKernelBytes(t, b, "sm_90", map[string][]byte{"q": qb, "k": kb, "y": make([]byte, 4*rows*64)}, nil)
			text := pk.Module.Print()
			if split := strings.Contains(text, "all-reduce the partial sums of 4 warps"); split != c.split {
				t.Errorf("scores split along the reduction: %v, want %v", split, c.split)
			}
			// P is rounded to bf16 from the kernel's ex2.approx: a bf16 ulp of each term.
			compare(t, "attention tile", seed, got, want, 2e-2, 1e-2)
		})
	}
}

// TestSplitDotNeedsZeroStart: a score chain that starts from a non-zero
// accumulator is not split (every warp would add it), and still computes.
func TestSplitDotNeedsZeroStart(t *testing.T) {
	b := ir.NewBuilder("start")
	q := b.Param("q", ir.PtrTo(ir.BF16), 16, 2*16*64)
	k := b.Param("k", ir.PtrTo(ir.BF16), 16, 2*32*64)
	y := f32Param(b, "y", 16)
	b.SetWarps(4)
	b.SetGrid(1, 1, 1)
	b.SetLatency(ir.LatencyLarge)
	rows := b.Mul(b.Cast(b.Iota(16), ir.I64), b.I64(64))
	kr := b.Mul(b.Cast(b.Iota(32), ir.I64), b.I64(64))
	s := b.Dot(b.Load2(q, rows, b.I64(0), 64, nil, nil), b.Trans(b.Load2(k, kr, b.I64(0), 64, nil, nil)), b.ConstFloat(1, ir.TileOf(ir.F32, 16, 32)))
	b.Store1(y, b.Cast(b.Iota(16), ir.I64), nil, b.Reduce("max", s, 1))
	kern, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compile(kern, target.MustLookup("sm_90"), Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Kernel.Module.Print(), "all-reduce") {
		t.Errorf("a dot starting from 1.0 was split along its reduction")
	}
}
