package lower

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/target"
)

// TestSwizzledAttention: on a target whose shared memory holds attentionTile's
// tiles only without the padding of their ldmatrix rows, the smem pass swizzles
// them (A, B read through a transpose, B read with .trans, cp.async copies in)
// and the emulator's output still matches float64; where the padded layout fits,
// it is kept.
func TestSwizzledAttention(t *testing.T) {
	const rows, cands, chunks = 16, 32, 3
	for i, latency := range []ir.Latency{ir.LatencyLarge, ir.LatencySmall} {
		t.Run(map[ir.Latency]string{ir.LatencyLarge: "split", ir.LatencySmall: "whole"}[latency], func(t *testing.T) {
			k, err := attentionTile(rows, cands, chunks, 4, latency).Finish()
			if err != nil {
				t.Fatal(err)
			}
			tg := target.MustLookup("sm_90")
			padded, err := Measure(k, tg)
			if err != nil {
				t.Fatal(err)
			}
			if dump := smemDump(t, k, tg); strings.Contains(dump, "swizzled") {
				t.Errorf("padded layout fits in %d bytes, yet tiles were swizzled:\n%s", padded.SharedBytes, dump)
			}
			tg.MaxSharedPerBlock = padded.SharedBytes - 128
			fig, err := Measure(k, tg)
			if err != nil || !fig.Fits || fig.SharedBytes >= padded.SharedBytes {
				t.Fatalf("with %d bytes: measures %d bytes, fits %v (%v); padded %d", tg.MaxSharedPerBlock, fig.SharedBytes, fig.Fits, err, padded.SharedBytes)
			}
			// q's and k's chunks (the dot operands in shared memory) are swizzled,
			// and so are k's transposed views.
			if n := strings.Count(smemDump(t, k, tg), "swizzled"); n != 3*chunks {
				t.Errorf("%d swizzled tiles and views, want %d", n, 3*chunks)
			}
			seed := uint64(910 + i)
			qb, kb, want := attentionInputs(seed, rows, cands, chunks)
			got, _ := runUserKernelOn(t, attentionTile(rows, cands, chunks, 4, latency), tg,
				map[string][]byte{"q": qb, "k": kb, "y": make([]byte, 4*rows*64)}, nil)
			compare(t, "swizzled attention tile", seed, got, want, 2e-2, 1e-2)
		})
	}
}

// smemDump is k's IR annotated with the smem pass's placements on tg.
func smemDump(t *testing.T, k *ir.Kernel, tg target.Target) string {
	t.Helper()
	res, err := Compile(k, tg, Options{After: "smem", Check: true})
	if err != nil {
		t.Fatal(err)
	}
	return res.Dump
}

// TestSwizzledUnalignedSteps: a warp of 8 reads 3 n8 tiles of a swizzled B
// stored [k][n] (48 bytes along its rows: the pairs of n8 tiles step across
// the swizzled chunk bits from a column base that is not a multiple of 64), so
// its bases come from the lane's row, column and row bits, four of them; and
// the last n8 tile takes ldmatrix .x2. Emulator against float64.
func TestSwizzledUnalignedSteps(t *testing.T) {
	const m, k, n = 16, 64, 192
	build := func() *ir.Builder {
		b := ir.NewBuilder("unaligned_steps")
		a := b.Param("a", ir.PtrTo(ir.BF16), 16, 2*m*k)
		bm := b.Param("b", ir.PtrTo(ir.BF16), 16, 2*k*n)
		y := f32Param(b, "y", m*n)
		b.SetWarps(8)
		b.SetGrid(1, 1, 1)
		at := b.Load2(a, b.Mul(b.Cast(b.Iota(m), ir.I64), b.I64(k)), b.I64(0), k, nil, nil)
		bt := b.Load2(bm, b.Mul(b.Cast(b.Iota(k), ir.I64), b.I64(n)), b.I64(0), n, nil, nil)
		d := b.Dot(at, bt, b.ConstFloat(0, ir.TileOf(ir.F32, m, n)))
		b.Store2(y, b.Mul(b.Cast(b.Iota(m), ir.I64), b.I64(n)), b.I64(0), nil, nil, d)
		return b
	}
	kern, err := build().Finish()
	if err != nil {
		t.Fatal(err)
	}
	tg := target.MustLookup("sm_90")
	padded, err := Measure(kern, tg)
	if err != nil {
		t.Fatal(err)
	}
	tg.MaxSharedPerBlock = padded.SharedBytes - 128
	if n := strings.Count(smemDump(t, kern, tg), "swizzled"); n != 2 {
		t.Fatalf("%d swizzled tiles, want a and b", n)
	}
	const seed = 930
	rng := rand.New(rand.NewPCG(seed, 3))
	ab, av := randomBF16(rng, m*k, 1)
	bb, bv := randomBF16(rng, k*n, 1)
	want := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			for x := 0; x < k; x++ {
				want[i*n+j] += av[i*k+x] * bv[x*n+j]
			}
		}
	}
	got, pk := runUserKernelOn(t, build(), tg, map[string][]byte{"a": ab, "b": bb, "y": make([]byte, 4*m*n)}, nil)
	text := pk.Module.Print()
	if !strings.Contains(text, "ldmatrix.sync.aligned.m8n8.x2.trans") || strings.Count(text, "xor.b32") < 4 {
		t.Errorf("want .x2.trans loads and XORed bases in:\n%s", text)
	}
	compare(t, "unaligned swizzled steps", seed, got, want, 1e-3, 1e-3)
}
