package lower

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/internal/ptxas"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// rolesCase is one warp-specialized matmul: y[m x n] = a[m x k] times the
// dequantized b (e4m3 times a scale, rounded to bf16), k walked in chunks by a
// loop split by roles: a "load" role copies the chunk of a and dequantizes the
// chunk of b into shared memory, an "mma" role multiplies them.
type rolesCase struct {
	m, n, k, chunk, stages int
	mmaWarps, loadWarps    int
	loadFirst              bool // the load role takes the CTA's first warps
}

func (c rolesCase) String() string {
	return fmt.Sprintf("m%d_n%d_k%d_c%d_s%d_mma%d_load%d_first%v", c.m, c.n, c.k, c.chunk, c.stages, c.mmaWarps, c.loadWarps, c.loadFirst)
}

func rolesMatmul(c rolesCase) *ir.Builder {
	b := ir.NewBuilder("roles_matmul")
	a := b.Param("a", ir.PtrTo(ir.BF16), 16, int64(2*c.m*c.k))
	bq := b.Param("bq", ir.PtrTo(ir.E4M3), 16, int64(c.k*c.n))
	y := f32Param(b, "y", c.m*c.n)
	scale := b.Param("scale", ir.ScalarOf(ir.F32), 0, 0)
	b.SetWarps(c.mmaWarps + c.loadWarps)
	if c.loadFirst {
		b.DeclareRole("load", 0, c.loadWarps)
		b.DeclareRole("mma", c.loadWarps, c.mmaWarps)
	} else {
		b.DeclareRole("mma", 0, c.mmaWarps)
		b.DeclareRole("load", c.mmaWarps, c.loadWarps)
	}
	rows := b.Cast(b.Iota(c.m), ir.I64)
	acc := b.ConstFloat(0, ir.TileOf(ir.F32, c.m, c.n))
	res := b.ForStages(b.I32(0), b.I32(int64(c.k/c.chunk)), 1, c.stages, []*ir.Value{acc}, func(j *ir.Value, carried []*ir.Value) []*ir.Value {
		var at, bt *ir.Value
		b.OnRole("load", func() {
			k0 := b.Cast(b.Mul(j, b.I32(int64(c.chunk))), ir.I64)
			at = b.Load2(a, b.Mul(rows, b.I64(int64(c.k))), k0, c.chunk, nil, nil)
			brows := b.Mul(b.Add(b.Cast(b.Iota(c.chunk), ir.I64), k0), b.I64(int64(c.n)))
			raw := b.Load2(bq, brows, b.I64(0), c.n, nil, nil)
			bt = b.Cast(b.Mul(b.Cast(raw, ir.F32), scale), ir.BF16)
		})
		var next *ir.Value
		b.OnRole("mma", func() { next = b.Dot(at, bt, carried[0]) })
		return []*ir.Value{next}
	})
	b.OnRole("mma", func() {
		b.Store2(y, b.Mul(rows, b.I64(int64(c.n))), b.I64(0), nil, nil, res[0])
	})
	return b
}

// rolesInputs are seeded random a (bf16) and b (e4m3) and the float64 product
// of a with b dequantized as the kernel does.
func rolesInputs(c rolesCase, seed uint64, scale float32) (map[string][]byte, []float64) {
	rng := rand.New(rand.NewPCG(seed, 21))
	ab, av := randomBF16(rng, c.m*c.k, 1)
	bb := make([]byte, c.k*c.n)
	bv := make([]float64, c.k*c.n)
	for i := range bb {
		e := dtype.E4M3FromF64(rng.NormFloat64() * 4)
		bb[i] = byte(e)
		bv[i] = dtype.BF16FromF32(e.F32() * scale).F64()
	}
	want := make([]float64, c.m*c.n)
	for i := 0; i < c.m; i++ {
		for j := 0; j < c.n; j++ {
			for l := 0; l < c.k; l++ {
				want[i*c.n+j] += av[i*c.k+l] * bv[l*c.n+j]
			}
		}
	}
	return map[string][]byte{"a": ab, "bq": bb, "y": make([]byte, 4*c.m*c.n)}, want
}

var rolesCases = []rolesCase{
	{64, 64, 256, 64, 2, 4, 2, false},
	{64, 64, 256, 64, 2, 4, 2, true},
	{32, 64, 192, 64, 1, 2, 1, false},
	{64, 32, 320, 64, 3, 4, 4, true},
	{16, 64, 128, 32, 2, 1, 1, false},
}

// TestRolesMatmul: the warp-specialized matmul in the emulator against float64,
// with the producer before and after the consumer among the CTA's warps, rings of
// 1 to 3 slots and as many iterations as slots or more.
func TestRolesMatmul(t *testing.T) {
	for i, c := range rolesCases {
		arch := []string{"sm_90", "sm_80", "sm_120"}[i%3]
		t.Run(c.String()+"_"+arch, func(t *testing.T) {
			seed := uint64(2100 + i)
			bufs, want := rolesInputs(c, seed, 0.25)
			got, pk := runUserKernelOn(t, rolesMatmul(c), target.MustLookup(arch), bufs, map[string]float32{"scale": 0.25})
			compare(t, "roles matmul", seed, got, want, 1e-4, 1e-5)
			text := pk.Module.Print()
			// The roles synchronize on their own barriers, never on the CTA's
			// inside the loop: one bar.sync 0 where they rejoin after it.
			if n := strings.Count(text, "bar.sync 0;"); n != 1 {
				t.Errorf("%d CTA-wide barriers, want 1 (after the loop)", n)
			}
			if !strings.Contains(text, "bar.arrive") {
				t.Errorf("no bar.arrive: the ring is not handed over")
			}
		})
	}
}

// rolesPlanted compiles case c through sync and hands its body to plant, then
// runs the checker and the emulator on the result.
func rolesPlanted(t *testing.T, c rolesCase, plant func(body []ptx.Stmt) bool) (checkErr, emuErr error) {
	t.Helper()
	k, err := rolesMatmul(c).Finish()
	if err != nil {
		t.Fatal(err)
	}
	f := compileTo(t, k, "sm_90", "sync", Options{})
	if !plant(f.out.Module.Funcs[0].Body) {
		t.Fatal("nothing to plant the bug in")
	}
	checkErr = checkSync(f)
	bufs, _ := rolesInputs(c, 1, 0.25)
	mem := emu.NewMemory()
	var args []any
	for _, p := range k.Params {
		if p.Value.Type.Kind == ir.Ptr {
			args = append(args, mem.Alloc(p.Value.Name, bufs[p.Value.Name]))
		} else {
			args = append(args, float32(0.25))
		}
	}
	return checkErr, emu.RunKernel(f.out, args, mem)
}

// TestRolesPlantedBugs: the bugs a warp-specialized kernel can have, planted in
// the matmul's handoff, are each reported: by the sync check where the slot
// protocol is broken in the code, by the emulator where the barriers do not
// meet (a deadlock, an arrive/sync count mismatch, a warp arriving twice).
func TestRolesPlantedBugs(t *testing.T) {
	c := rolesCases[0] // 2 slots, 4 iterations
	// find is the first handoff barrier op (a slot's barrier: a register id).
	find := func(body []ptx.Stmt, op string, guarded bool) int {
		for i, s := range body {
			if in, ok := s.(*ptx.Instr); ok && in.Op == op && (in.Guard != "") == guarded && len(in.Args) == 2 {
				if _, reg := in.Args[0].(ptx.Reg); reg {
					return i
				}
			}
		}
		return -1
	}
	remove := func(body []ptx.Stmt, op string, guarded bool) bool {
		i := find(body, op, guarded)
		if i >= 0 {
			body[i] = &ptx.Comment{Text: "planted: " + op + " removed"}
		}
		return i >= 0
	}
	for _, bug := range []struct {
		name           string
		plant          func([]ptx.Stmt) bool
		inCheck, inEmu string
	}{
		{"consumer reads before the slot is full", func(b []ptx.Stmt) bool { return remove(b, "bar.sync", false) },
			"acquires its ring slot without a bar.sync of both roles", "read of a byte no thread of this CTA has written"},
		{"producer refills a slot before the consumer gave it back", func(b []ptx.Stmt) bool { return remove(b, "bar.sync", true) },
			"acquires its ring slot without a bar.sync of both roles", "data race"},
		{"producer never publishes the slot", func(b []ptx.Stmt) bool { return remove(b, "bar.arrive", false) },
			"without a bar.arrive", "deadlock"},
		{"arrive of the producer's threads only against the handoff's count", func(b []ptx.Stmt) bool {
			i := find(b, "bar.arrive", false)
			if i >= 0 {
				b[i].(*ptx.Instr).Args[1] = ptx.Imm(32 * c.loadWarps)
			}
			return i >= 0
		}, "without a bar.arrive of both roles' threads", "barrier"},
		{"consumer gives every slot back, also the last ones", func(b []ptx.Stmt) bool {
			i := find(b, "bar.arrive", true)
			if i >= 0 {
				b[i].(*ptx.Instr).Guard = ""
			}
			return i >= 0
		}, "", "arrive"},
	} {
		t.Run(bug.name, func(t *testing.T) {
			checkErr, emuErr := rolesPlanted(t, c, bug.plant)
			t.Logf("sync check: %v\nemulator: %v", checkErr, emuErr)
			if bug.inCheck != "" && (checkErr == nil || !strings.Contains(checkErr.Error(), bug.inCheck)) {
				t.Errorf("sync check: %v, want an error with %q", checkErr, bug.inCheck)
			}
			if emuErr == nil || !strings.Contains(emuErr.Error(), bug.inEmu) {
				t.Errorf("emulator: %v, want an error with %q", emuErr, bug.inEmu)
			}
		})
	}
}

// TestRolesRefused: what the roles cannot express is refused with the value, the
// roles and the way out named.
func TestRolesRefused(t *testing.T) {
	build := func(name string, body func(b *ir.Builder, a, y *ir.Value)) error {
		b := ir.NewBuilder(name)
		a := b.Param("a", ir.PtrTo(ir.BF16), 16, 2*64*64)
		y := f32Param(b, "y", 64*64)
		b.SetWarps(6)
		b.DeclareRole("mma", 0, 4)
		b.DeclareRole("load", 4, 2)
		body(b, a, y)
		k, err := b.Finish()
		if err != nil {
			return err
		}
		_, err = Compile(k, target.MustLookup("sm_90"), Options{Check: true})
		return err
	}
	rows := func(b *ir.Builder) *ir.Value { return b.Mul(b.Cast(b.Iota(64), ir.I64), b.I64(64)) }
	for _, c := range []struct {
		name string
		body func(b *ir.Builder, a, y *ir.Value)
		want string
	}{
		{"fragments cross roles", func(b *ir.Builder, a, y *ir.Value) {
			var d *ir.Value
			b.OnRole("mma", func() {
				t := b.Load2(a, rows(b), b.I64(0), 64, nil, nil)
				d = b.Dot(t, b.Trans(t), b.ConstFloat(0, ir.TileOf(ir.F32, 64, 64)))
			})
			b.OnRole("load", func() { b.Store2(y, rows(b), b.I64(0), nil, nil, d) })
		}, "across roles only tiles with a shared home"},
		{"an op of no role in a split loop", func(b *ir.Builder, a, y *ir.Value) {
			acc := b.ConstFloat(0, ir.TileOf(ir.F32, 64, 64))
			res := b.For(b.I32(0), b.I32(2), 1, []*ir.Value{acc}, func(j *ir.Value, c []*ir.Value) []*ir.Value {
				var t *ir.Value
				b.OnRole("load", func() { t = b.Load2(a, rows(b), b.I64(0), 64, nil, nil) })
				// Staged for the dot, so not index arithmetic: it needs a role.
				twice := b.Cast(b.Mul(b.Cast(t, ir.F32), b.F32(2)), ir.BF16)
				var next *ir.Value
				b.OnRole("mma", func() { next = b.Dot(twice, b.Trans(t), c[0]) })
				return []*ir.Value{next}
			})
			b.OnRole("mma", func() { b.Store2(y, rows(b), b.I64(0), nil, nil, res[0]) })
		}, "place this one on one"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := build("refused", c.body)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one with %q", err, c.want)
			}
		})
	}
}

// TestRolesOutsideLoops: roles outside any split loop. A load role fills a tile
// (in a loop placed on that role: a sum of chunks, staged for the dot) and copies
// a second one; the mma role multiplies them after the region, with the CTA
// settled between the roles (a tile crosses roles through shared memory only).
func TestRolesOutsideLoops(t *testing.T) {
	const m, k, chunks = 32, 64, 3
	b := ir.NewBuilder("roles_top")
	a := b.Param("a", ir.PtrTo(ir.BF16), 16, 2*m*k)
	x := b.Param("x", ir.PtrTo(ir.F32), 16, 4*chunks*k*k)
	y := f32Param(b, "y", m*k)
	b.SetWarps(3)
	b.DeclareRole("load", 0, 1)
	b.DeclareRole("mma", 1, 2)
	rows := b.Cast(b.Iota(m), ir.I64)
	xrows := b.Mul(b.Cast(b.Iota(k), ir.I64), b.I64(k))
	var at, bt *ir.Value
	b.OnRole("load", func() {
		at = b.Load2(a, b.Mul(rows, b.I64(k)), b.I64(0), k, nil, nil)
		sum := b.For(b.I32(0), b.I32(chunks), 1, []*ir.Value{b.ConstFloat(0, ir.TileOf(ir.F32, k, k))}, func(j *ir.Value, c []*ir.Value) []*ir.Value {
			off := b.Cast(b.Mul(j, b.I32(k*k)), ir.I64)
			return []*ir.Value{b.Add(c[0], b.Load2(x, b.Add(xrows, off), b.I64(0), k, nil, nil))}
		})
		bt = b.Cast(sum[0], ir.BF16)
	})
	b.OnRole("mma", func() {
		d := b.Dot(at, bt, b.ConstFloat(0, ir.TileOf(ir.F32, m, k)))
		b.Store2(y, b.Mul(rows, b.I64(k)), b.I64(0), nil, nil, d)
	})
	seed := uint64(2200)
	bufs, want := chunkSumInputs(seed, m, k, 1, chunks)
	got, pk := runUserKernelOn(t, b, target.MustLookup("sm_90"), bufs, nil)
	compare(t, "roles outside loops", seed, got, want, 1e-4, 1e-5)
	// The emulator reports a read of a tile another warp wrote with no barrier
	// between; the one here is the CTA's, where the load role's region ends.
	if text := pk.Module.Print(); !strings.Contains(text, "bar.sync 0;") {
		t.Errorf("no CTA barrier settles the load role's tiles before the mma role reads them")
	}
}

// TestRolesNestedLoop: a loop placed on the producer role inside a split loop (it
// sums two chunks of x into the tile it hands over), with a ring of 2 slots.
func TestRolesNestedLoop(t *testing.T) {
	const m, k, outer, inner = 16, 64, 3, 2
	b := ir.NewBuilder("roles_nested")
	a := b.Param("a", ir.PtrTo(ir.BF16), 16, 2*m*k)
	x := b.Param("x", ir.PtrTo(ir.F32), 16, 4*outer*inner*k*k)
	y := f32Param(b, "y", m*k)
	b.SetWarps(2)
	b.DeclareRole("mma", 0, 1)
	b.DeclareRole("load", 1, 1)
	rows := b.Cast(b.Iota(m), ir.I64)
	xrows := b.Mul(b.Cast(b.Iota(k), ir.I64), b.I64(k))
	var at *ir.Value
	b.OnRole("mma", func() { at = b.Load2(a, b.Mul(rows, b.I64(k)), b.I64(0), k, nil, nil) })
	var acc *ir.Value
	b.OnRole("mma", func() { acc = b.ConstFloat(0, ir.TileOf(ir.F32, m, k)) })
	res := b.ForStages(b.I32(0), b.I32(outer), 1, 2, []*ir.Value{acc}, func(i *ir.Value, c []*ir.Value) []*ir.Value {
		var bt *ir.Value
		b.OnRole("load", func() {
			sum := b.For(b.I32(0), b.I32(inner), 1, []*ir.Value{b.ConstFloat(0, ir.TileOf(ir.F32, k, k))}, func(j *ir.Value, s []*ir.Value) []*ir.Value {
				off := b.Cast(b.Mul(b.Add(b.Mul(i, b.I32(inner)), j), b.I32(k*k)), ir.I64)
				return []*ir.Value{b.Add(s[0], b.Load2(x, b.Add(xrows, off), b.I64(0), k, nil, nil))}
			})
			bt = b.Cast(sum[0], ir.BF16)
		})
		var next *ir.Value
		b.OnRole("mma", func() { next = b.Dot(at, bt, c[0]) })
		return []*ir.Value{next}
	})
	b.OnRole("mma", func() { b.Store2(y, b.Mul(rows, b.I64(k)), b.I64(0), nil, nil, res[0]) })
	seed := uint64(2300)
	bufs, want := chunkSumInputs(seed, m, k, outer, inner)
	got, _ := runUserKernelOn(t, b, target.MustLookup("sm_90"), bufs, nil)
	compare(t, "roles nested loop", seed, got, want, 1e-4, 1e-5)
}

// TestRolesAssemble: ptxas 11.8 assembles the warp-specialized matmuls for sm_80
// and sm_90 with no warning and no spill.
func TestRolesAssemble(t *testing.T) {
	ptxas.Require(t)
	for _, c := range rolesCases {
		for _, arch := range []string{"sm_80", "sm_90"} {
			k, err := rolesMatmul(c).Finish()
			if err != nil {
				t.Fatal(err)
			}
			res, err := Compile(k, target.MustLookup(arch), Options{})
			if err != nil {
				t.Fatalf("%v %s: %v", c, arch, err)
			}
			out, err := ptxas.Assemble(res.Kernel.Module.Print(), arch)
			if err != nil {
				t.Fatalf("%v %s: %v", c, arch, err)
			}
			if len(out.Warnings) > 0 || out.SpillStores+out.SpillLoads+out.LocalBytes > 0 {
				t.Errorf("%v %s: warnings %q, spills %d+%d bytes, local %d", c, arch, out.Warnings, out.SpillStores, out.SpillLoads, out.LocalBytes)
			}
		}
	}
}

// chunkSumInputs are seeded buffers for the chunk-summing matmuls above: a (bf16,
// m x k), x (f32, outer x inner chunks of k x k) and y, with the float64 product
// y = sum over o of a x bf16(sum over i of x[o][i]).
func chunkSumInputs(seed uint64, m, k, outer, inner int) (map[string][]byte, []float64) {
	rng := rand.New(rand.NewPCG(seed, 22))
	ab, av := randomBF16(rng, m*k, 1)
	xs := make([]float32, outer*inner*k*k)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64())
	}
	bufs := f32Buffers(map[string][]float32{"x": xs, "y": make([]float32, m*k)})
	bufs["a"] = ab
	want := make([]float64, m*k)
	for o := 0; o < outer; o++ {
		for l := 0; l < k; l++ {
			for j := 0; j < k; j++ {
				s := float32(0)
				for in := 0; in < inner; in++ {
					s += xs[(o*inner+in)*k*k+l*k+j]
				}
				bv := dtype.BF16FromF32(s).F64()
				for r := 0; r < m; r++ {
					want[r*k+j] += av[r*k+l] * bv
				}
			}
		}
	}
	return bufs, want
}

// phasedCase is a loop that places its scores on a role and runs the rest on
// every warp (a phased loop, not split by roles): per chunk j every warp loads
// x_j, the score role computes s = a x_j, its row max r, the rescale g =
// 1/(r^2+1) and the carried running max, and every warp accumulates acc = acc x g
// + bf16(s) x_j; after the loop y = acc / (max + 1).
type phasedCase struct {
	arch                     string
	warps, first, scoreWarps int
	stages                   int
}

func phasedKernel(c phasedCase, m, k, chunks int) *ir.Builder {
	b := ir.NewBuilder("roles_phased")
	a := b.Param("a", ir.PtrTo(ir.BF16), 16, int64(2*m*k))
	x := b.Param("x", ir.PtrTo(ir.BF16), 16, int64(2*chunks*k*k))
	y := f32Param(b, "y", m*k)
	b.SetWarps(c.warps)
	b.DeclareRole("score", c.first, c.scoreWarps)
	rows := b.Mul(b.Cast(b.Iota(m), ir.I64), b.I64(int64(k)))
	at := b.Load2(a, rows, b.I64(0), k, nil, nil)
	var mrun *ir.Value
	b.OnRole("score", func() { mrun = b.ConstFloat(0, ir.TileOf(ir.F32, m)) })
	acc := b.ConstFloat(0, ir.TileOf(ir.F32, m, k))
	res := b.ForStages(b.I32(0), b.I32(int64(chunks)), 1, c.stages, []*ir.Value{mrun, acc}, func(j *ir.Value, cr []*ir.Value) []*ir.Value {
		x0 := b.Cast(b.Mul(j, b.I32(int64(k*k))), ir.I64)
		xt := b.Load2(x, b.Add(b.Mul(b.Cast(b.Iota(k), ir.I64), b.I64(int64(k))), x0), b.I64(0), k, nil, nil)
		var mnew, g, ps *ir.Value
		b.OnRole("score", func() {
			sc := b.Dot(at, xt, b.ConstFloat(0, ir.TileOf(ir.F32, m, k)))
			r := b.Reduce("max", sc, 1)
			mnew = b.Max(cr[0], r)
			g = b.Rcp(b.Add(b.Mul(r, r), b.F32(1)))
			ps = b.Cast(sc, ir.BF16)
		})
		next := b.Dot(ps, xt, b.Mul(cr[1], b.Broadcast(g, 1, m, k)))
		return []*ir.Value{mnew, next}
	})
	var h *ir.Value
	b.OnRole("score", func() { h = b.Rcp(b.Add(res[0], b.F32(1))) })
	b.Store2(y, rows, b.I64(0), nil, nil, b.Mul(res[1], b.Broadcast(h, 1, m, k)))
	return b
}

// phasedInputs are a and x with entries in {-1, 0, 1} (so every score, at most k
// in magnitude, is exact in bf16 and the float64 reference rounds nothing the
// kernel does not) and y in float64.
func phasedInputs(seed uint64, m, k, chunks int) (map[string][]byte, []float64) {
	rng := rand.New(rand.NewPCG(seed, 23))
	trit := func(n int) ([]byte, []float64) {
		raw, vals := make([]byte, 2*n), make([]float64, n)
		for i := range vals {
			vals[i] = float64(rng.IntN(3) - 1)
			binary.LittleEndian.PutUint16(raw[2*i:], uint16(dtype.BF16FromF64(vals[i])))
		}
		return raw, vals
	}
	ab, av := trit(m * k)
	xb, xv := trit(chunks * k * k)
	acc := make([]float64, m*k)
	mrun := make([]float64, m)
	for j := 0; j < chunks; j++ {
		xj := xv[j*k*k:]
		for r := 0; r < m; r++ {
			s := make([]float64, k)
			rmax := math.Inf(-1)
			for c := range s {
				for l := 0; l < k; l++ {
					s[c] += av[r*k+l] * xj[l*k+c]
				}
				rmax = math.Max(rmax, s[c])
			}
			mrun[r] = math.Max(mrun[r], rmax)
			g := 1 / (rmax*rmax + 1)
			for c := 0; c < k; c++ {
				v := acc[r*k+c] * g
				for l := 0; l < k; l++ {
					v += s[l] * xj[l*k+c]
				}
				acc[r*k+c] = v
			}
		}
	}
	for r := 0; r < m; r++ {
		for c := 0; c < k; c++ {
			acc[r*k+c] /= mrun[r] + 1
		}
	}
	return map[string][]byte{"a": ab, "x": xb, "y": make([]byte, 4*m*k)}, acc
}

// TestRolesPhasedLoop: a loop that runs its scores on a role and the rest on
// every warp, in the emulator against float64: the role's row vectors (the
// rescale, and after the loop the carried max) and its bf16 scores reach the
// other warps through shared memory, behind CTA barriers.
func TestRolesPhasedLoop(t *testing.T) {
	const m, k, chunks = 64, 64, 3
	for i, c := range []phasedCase{
		{"sm_90", 8, 0, 4, 2},
		{"sm_80", 4, 2, 2, 1},
		{"sm_120", 4, 0, 1, 2},
	} {
		t.Run(fmt.Sprintf("%s_w%d_score%d+%d_s%d", c.arch, c.warps, c.first, c.scoreWarps, c.stages), func(t *testing.T) {
			seed := uint64(2400 + i)
			bufs, want := phasedInputs(seed, m, k, chunks)
			got, pk := runUserKernelOn(t, phasedKernel(c, m, k, chunks), target.MustLookup(c.arch), bufs, nil)
			compare(t, "roles phased loop", seed, got, want, 1e-4, 1e-5)
			if strings.Contains(pk.Module.Print(), "bar.arrive") {
				t.Errorf("a phased loop hands nothing over through a ring, but the code arrives on a barrier")
			}
		})
	}
}
