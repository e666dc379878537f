package lower

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/internal/ptxas"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// flashTile is flash attention for one CTA of rows query rows over tiles tiles of
// 64 candidates (online softmax: the running row max m and sum l carried, the
// accumulator o rescaled by alpha = exp2(m_old - m) every tile), 8 warps.
// q·k's scores [rows x 64] are split 4x2 (4 row groups: ChooseWarpGrid's rule,
// rows per warp first); the P·V dot, named "pv", states its schedule, warps 2x4,
// the split issue 21's 64-head CTA gives it (P·V by columns, V read by fewer row
// groups), which the lowering would not choose here. So alpha (4 row groups) meets
// the accumulator (2) in o * broadcast(alpha) inside the loop, and 1/l meets the
// final o after it: both are read through a shared home.
// With divide, the final o is divided by the loop's l itself (a loop result,
// staged after the loop) instead of multiplied by rcp(l); with stages > 1 the
// loop is pipelined (k and v of the next tile loaded during this one).
func flashTile(rows, tiles, dk, dv int, divide bool, stages int) *ir.Builder {
	b := ir.NewBuilder("flash_tile")
	q := b.Param("q", ir.PtrTo(ir.BF16), 16, int64(2*rows*dk))
	k := b.Param("k", ir.PtrTo(ir.BF16), 16, int64(2*tiles*64*dk))
	v := b.Param("v", ir.PtrTo(ir.BF16), 16, int64(2*tiles*64*dv))
	y := f32Param(b, "y", rows*dv)
	b.SetWarps(8)
	b.SetGrid(1, 1, 1)
	b.SetLatency(ir.LatencyLarge)
	qt := b.Load2(q, b.Mul(b.Cast(b.Iota(rows), ir.I64), b.I64(int64(dk))), b.I64(0), dk, nil, nil)
	cand := b.Cast(b.Iota(64), ir.I64)
	inits := []*ir.Value{b.ConstFloat(ir.NegInf, ir.TileOf(ir.F32, rows)), b.ConstFloat(0, ir.TileOf(ir.F32, rows)), b.ConstFloat(0, ir.TileOf(ir.F32, rows, dv))}
	loop := b.For
	if stages > 1 {
		loop = func(lo, hi *ir.Value, step int, inits []*ir.Value, body func(*ir.Value, []*ir.Value) []*ir.Value) []*ir.Value {
			return b.ForStages(lo, hi, step, stages, inits, body)
		}
	}
	res := loop(b.I32(0), b.I32(int64(tiles)), 1, inits, func(t *ir.Value, st []*ir.Value) []*ir.Value {
		row0 := b.Add(cand, b.Mul(b.Cast(t, ir.I64), b.I64(64)))
		kt := b.Load2(k, b.Mul(row0, b.I64(int64(dk))), b.I64(0), dk, nil, nil)
		vt := b.Load2(v, b.Mul(row0, b.I64(int64(dv))), b.I64(0), dv, nil, nil)
		s := b.Dot(qt, b.Trans(kt), b.ConstFloat(0, ir.TileOf(ir.F32, rows, 64)))
		m := b.Max(st[0], b.Reduce("max", s, 1))
		p := b.Exp2(b.Sub(s, b.Broadcast(m, 1, rows, 64)))
		alpha := b.Exp2(b.Sub(st[0], m))
		l := b.Add(b.Mul(st[1], alpha), b.Reduce("sum", p, 1))
		o := b.Name(b.ScheduledDot(b.Cast(p, ir.BF16), vt, b.Mul(st[2], b.Broadcast(alpha, 1, rows, dv)), ir.DotSchedule{Warps: [2]int{2, 4}}), "pv")
		return []*ir.Value{m, l, o}
	})
	var out *ir.Value
	if divide {
		out = b.Div(res[2], b.Broadcast(res[1], 1, rows, dv))
	} else {
		out = b.Mul(res[2], b.Broadcast(b.Rcp(res[1]), 1, rows, dv))
	}
	b.Store2(y, b.Mul(b.Cast(b.Iota(rows), ir.I64), b.I64(int64(dv))), b.I64(0), nil, nil, out)
	return b
}

// flashInputs are flashTile's q, k and v, random bf16 from seed, and its float64
// output: softmax(q·kᵀ over base 2) · v.
func flashInputs(seed uint64, rows, tiles, dk, dv int) (qb, kb, vb []byte, want []float64) {
	rng := rand.New(rand.NewPCG(seed, 21))
	n := tiles * 64
	qb, qv := randomBF16(rng, rows*dk, 0.5)
	kb, kv := randomBF16(rng, n*dk, 0.5)
	vb, vv := randomBF16(rng, n*dv, 0.5)
	return qb, kb, vb, softmaxRows(qv, kv, vv, rows, n, dk, dv, dv, false)
}

// compileFlash compiles flashTile with P·V split by columns.
func compileFlash(t *testing.T, rows, tiles, dk, dv int, divide bool, stages int) *ptx.Kernel {
	t.Helper()
	k, err := flashTile(rows, tiles, dk, dv, divide, stages).Finish()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compile(k, target.MustLookup("sm_90"), Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	return res.Kernel
}

// runFlash runs a compiled flashTile in the emulator.
func runFlash(pk *ptx.Kernel, qb, kb, vb []byte, rows, dv int) ([]float32, error) {
	mem := emu.NewMemory()
	args := []any{mem.Alloc("q", qb), mem.Alloc("k", kb), mem.Alloc("v", vb), mem.Alloc("y", make([]byte, 4*rows*dv))}
	if err := emu.RunKernel(pk, args, mem); err != nil {
		return nil, err
	}
	raw := mem.Bytes("y")
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out, nil
}

// TestRowVectorOtherRowGroups: a softmax's row vectors split over 4 row groups
// (q·k's split) rescale and normalize an accumulator split over 2 (P·V's): the
// vectors go through shared memory, one writer per row, and the flash tile
// matches float64 (the emulator's race checker on). alpha is computed in the
// loop, its home rewritten every iteration (after the body's closing barrier,
// or a pipelined loop's next top barrier); the normalizer is rcp(l), computed
// after the loop, or l itself, a loop result.
func TestRowVectorOtherRowGroups(t *testing.T) {
	const rows, tiles, dk, dv = 64, 3, 64, 256
	for i, c := range []struct {
		divide bool
		stages int
	}{{false, 1}, {true, 1}, {false, 2}} {
		t.Run(fmt.Sprintf("divide=%v/stages=%d", c.divide, c.stages), func(t *testing.T) {
			pk := compileFlash(t, rows, tiles, dk, dv, c.divide, c.stages)
			text := pk.Module.Print()
			if n := strings.Count(text, "for a tile split over other row groups"); n != 2 {
				t.Errorf("%d row vectors staged for other row groups, want 2 (alpha in the loop, the normalizer after it)", n)
			}
			if pipelined := strings.Contains(text, "pipeline: 2 stages"); pipelined != (c.stages == 2) {
				t.Errorf("loop pipelined over 2 stages: %v, want %v", pipelined, c.stages == 2)
			}
			seed := uint64(2100 + 10*i)
			qb, kb, vb, want := flashInputs(seed, rows, tiles, dk, dv)
			got, err := runFlash(pk, qb, kb, vb, rows, dv)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			// P is rounded to bf16 (relative to the running max) for the second dot.
			compare(t, "flash tile, P·V split 2x4", seed, got, want, 1e-2, 1e-2)
		})
	}
}

// TestRowVectorPlantedBugs: the shared home of 1/l (the row vector that meets
// the final accumulator after the loop) needs its barrier between write and
// read, and its one writer per row. Without the barrier the sync check and the
// emulator's race checker report it; with every lane and warp of a row group
// writing (the writer predicate dropped), the race checker reports writes of
// one byte by several threads with no barrier between.
func TestRowVectorPlantedBugs(t *testing.T) {
	const rows, tiles, dk, dv = 64, 2, 64, 256
	k, err := flashTile(rows, tiles, dk, dv, false, 1).Finish()
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(2101)
	qb, kb, vb, _ := flashInputs(seed, rows, tiles, dk, dv)
	for _, plant := range []string{"barrier", "writer"} {
		t.Run(plant, func(t *testing.T) {
			f := compileTo(t, k, "sm_90", "sync", Options{})
			body := f.out.Module.Funcs[0].Body
			stage := -1
			for i, s := range body {
				if c, ok := s.(*ptx.Comment); ok && strings.Contains(c.Text, "for a tile split over other row groups") {
					stage = i // the last: 1/l, after the loop
				}
			}
			if stage < 0 {
				t.Fatal("no row vector staged for other row groups")
			}
			planted := 0
			for i := stage + 1; i < len(body); i++ {
				in, ok := body[i].(*ptx.Instr)
				if !ok {
					continue
				}
				if in.Op == "bar.sync" {
					if plant == "barrier" {
						body[i] = &ptx.Comment{Text: "removed bar.sync"}
						planted++
					}
					break
				}
				if plant == "writer" && in.Op == "st.shared.f32" && in.Guard != "" {
					in.Guard = ""
					planted++
				}
			}
			if planted == 0 {
				t.Fatalf("nothing to plant the %s bug in", plant)
			}
			if plant == "barrier" {
				if err := checkSync(f); err == nil || !strings.Contains(err.Error(), "no bar.sync after its last write") {
					t.Errorf("sync check with the row vector's barrier removed: %v", err)
				}
			}
			_, err := runFlash(f.out, qb, kb, vb, rows, dv)
			if err == nil || !strings.Contains(err.Error(), "data race") {
				t.Errorf("seed %d: emulator with the %s bug planted: %v, want a data race", seed, plant, err)
			}
		})
	}
}

// TestRowVectorReduceResult runs the codegen case row_vector_other_groups (one
// tile: the row sum itself, a reduction's result that also has cross-warp
// scratch, divides a P·V split 2x4) in the emulator against float64.
func TestRowVectorReduceResult(t *testing.T) {
	src, err := os.ReadFile("testdata/codegen/row_vector_other_groups.ir")
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compile(k, target.MustLookup("sm_90"), Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	const rows, dk, dv = 64, 64, 64
	seed := uint64(2102)
	qb, kb, vb, want := flashInputs(seed, rows, 1, dk, dv)
	got, err := runFlash(res.Kernel, qb, kb, vb, rows, dv)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	compare(t, "softmax · v, P·V split 2x4", seed, got, want, 1e-2, 1e-2)
}

// TestRowVectorCarriedRefused: a loop-carried row vector broadcast inside its
// loop onto a tile split over other row groups has no op to write it once per
// iteration; the error names it and the way out.
func TestRowVectorCarriedRefused(t *testing.T) {
	const rows, dv = 64, 64
	b := ir.NewBuilder("carried_rows")
	q := b.Param("q", ir.PtrTo(ir.BF16), 16, int64(2*rows*64))
	v := b.Param("v", ir.PtrTo(ir.BF16), 16, int64(2*64*dv))
	y := f32Param(b, "y", rows*dv)
	b.SetWarps(8)
	b.SetGrid(1, 1, 1)
	b.SetLatency(ir.LatencyLarge)
	offs := b.Mul(b.Cast(b.Iota(rows), ir.I64), b.I64(64))
	qt := b.Load2(q, offs, b.I64(0), 64, nil, nil)
	vt := b.Load2(v, b.Mul(b.Cast(b.Iota(64), ir.I64), b.I64(dv)), b.I64(0), dv, nil, nil)
	inits := []*ir.Value{b.ConstFloat(ir.NegInf, ir.TileOf(ir.F32, rows)), b.ConstFloat(0, ir.TileOf(ir.F32, rows, dv))}
	res := b.For(b.I32(0), b.I32(2), 1, inits, func(_ *ir.Value, st []*ir.Value) []*ir.Value {
		s := b.Dot(qt, b.Trans(qt), b.ConstFloat(0, ir.TileOf(ir.F32, rows, rows)))
		m := b.Max(st[0], b.Reduce("max", s, 1))
		p := b.Cast(b.Exp2(b.Sub(s, b.Broadcast(m, 1, rows, rows))), ir.BF16)
		o := b.ScheduledDot(p, vt, b.Mul(st[1], b.Broadcast(st[0], 1, rows, dv)), ir.DotSchedule{Warps: [2]int{2, 4}})
		return []*ir.Value{m, o}
	})
	b.Store2(y, offs, b.I64(0), nil, nil, res[1])
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(k, target.MustLookup("sm_90"), Options{Check: true})
	if err == nil || !strings.Contains(err.Error(), "loop-carried row vector") || !strings.Contains(err.Error(), "apply an op to it first") {
		t.Errorf("a loop-carried row vector meeting other row groups in its loop: %v", err)
	}
}

// TestRowVectorAssembles: ptxas assembles the flash tile (64 x 256 accumulator,
// P·V split 2x4) with no warning and no spill.
func TestRowVectorAssembles(t *testing.T) {
	ptxas.Require(t)
	for _, divide := range []bool{false, true} {
		pk := compileFlash(t, 64, 3, 64, 256, divide, 1)
		out, err := ptxas.Assemble(pk.Module.Print(), "sm_90")
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Warnings) > 0 || out.SpillStores+out.SpillLoads+out.LocalBytes > 0 {
			t.Errorf("divide %v: ptxas warnings %q, spills %d+%d bytes, local %d", divide, out.Warnings, out.SpillStores, out.SpillLoads, out.LocalBytes)
		}
	}
}

// TestRowVectorStageCheck: the stage check names a row vector that meets other
// row groups with no shared home.
func TestRowVectorStageCheck(t *testing.T) {
	k, err := flashTile(64, 2, 64, 256, false, 1).Finish()
	if err != nil {
		t.Fatal(err)
	}
	f := compileTo(t, k, "sm_90", "stage", Options{})
	if err := checkStaging(f); err != nil {
		t.Fatalf("stage check before the defect: %v", err)
	}
	removed := 0
	for v := range f.Staged {
		if f.Layouts[v].Kind == decision.Rows {
			delete(f.Staged, v)
			removed++
		}
	}
	if removed != 2 {
		t.Errorf("%d row vectors staged, want 2", removed)
	}
	if err := checkStaging(f); err == nil || !strings.Contains(err.Error(), "meets other row groups with no shared home") {
		t.Errorf("stage check without the row vectors' homes: %v", err)
	}
}
