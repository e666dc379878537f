package lower

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/target"
)

// withStages finishes b and asks every loop of the kernel for a pipeline of stages.
func withStages(t *testing.T, b *ir.Builder, stages int) *ir.Kernel {
	t.Helper()
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	ir.WalkOps(k.Body, func(o *ir.Op) {
		if o.Kind == ir.OpFor && stages > 1 {
			o.Stages = stages
		}
	})
	if err := ir.Verify(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// runBytes compiles k (checks on) and runs it in the emulator (race checker on)
// on copies of bufs, returning y's bytes and the PTX.
func runBytes(t *testing.T, k *ir.Kernel, arch string, bufs map[string][]byte) ([]byte, string) {
	t.Helper()
	res, err := Compile(k, target.MustLookup(arch), Options{Check: true})
	if err != nil {
		t.Fatalf("compile %s: %v", k.Name, err)
	}
	mem := emu.NewMemory()
	var args []any
	for _, p := range k.Params {
		if p.Value.Type.Kind != ir.Ptr {
			// An i32 scalar: its 4 bytes in bufs.
			args = append(args, int32(binary.LittleEndian.Uint32(bufs[p.Value.Name])))
			continue
		}
		args = append(args, mem.Alloc(p.Value.Name, append([]byte(nil), bufs[p.Value.Name]...)))
	}
	if err := emu.RunKernel(res.Kernel, args, mem); err != nil {
		t.Fatalf("%s: %v", k.Name, err)
	}
	return mem.Bytes("y"), res.Kernel.Module.Print()
}

func f32Bytes(x []float32) []byte {
	out := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

// sameAcrossStages runs the kernel parse builds unpipelined and at 2..4 stages and
// wants each pipelined run's loop pipelined and its output bit for bit the
// unpipelined one's; with wantWrites, an all-zero unpipelined output is an error
// (the comparison would prove nothing).
func sameAcrossStages(t *testing.T, what, arch string, bufs map[string][]byte, parse func(stages int) *ir.Kernel, wantWrites bool) {
	t.Helper()
	want, _ := runBytes(t, parse(1), arch, bufs)
	if wantWrites && bytes.Equal(want, make([]byte, len(want))) {
		t.Fatalf("%s: the unpipelined kernel wrote zeros", what)
	}
	for stages := 2; stages <= 4; stages++ {
		got, text := runBytes(t, parse(stages), arch, bufs)
		if !strings.Contains(text, fmt.Sprintf("// pipeline: %d stages", stages)) {
			t.Errorf("%s, stages %d: the loop's loads were not pipelined", what, stages)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s, stages %d: output differs from the unpipelined kernel's", what, stages)
		}
	}
}

// TestPipelinedLoopsBitExact pipelines the loops of user kernels whose bodies
// also write shared memory the pipeline does not own (the cross-warp reduction
// scratch of a chunked softmax and RMSNorm, carried sums of loaded chunks):
// over 2 and 3 stages every output bit equals the unpipelined kernel's (the
// arithmetic is the same, only the loads move), and the race checker passes.
func TestPipelinedLoopsBitExact(t *testing.T) {
	cases := []struct {
		name  string
		build func() *ir.Builder
		shape userShape
		outN  int
	}{
		{"softmax_chunked_96", nil, userShape{33, 1000, 16, 3}, 0},
		{"softmax_chunked_24", nil, userShape{7, 100, 16, 4}, 0},
		{"rmsnorm_chunked_256", nil, userShape{33, 1000, 16, 4}, 0},
		{"fold_chunks_100", nil, userShape{40, 300, 48, 3}, 0},
	}
	for i, c := range cases {
		s := c.shape
		build, n := func() *ir.Builder { return softmaxChunked(s, 96) }, s.rows*s.width
		switch i {
		case 1:
			build = func() *ir.Builder { return softmaxChunked(s, 24) }
		case 2:
			build = func() *ir.Builder { return rmsnormChunked(s, 256, 1e-5) }
		case 3:
			build, n = func() *ir.Builder { return foldChunks(s, 100) }, s.rows*100+s.ctas()*100
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			seed := uint64(4100 + i)
			rng := rand.New(rand.NewPCG(seed, 20))
			bufs := map[string][]byte{
				"x": f32Bytes(randomRows(rng, s.rows*s.width, 2)),
				"w": f32Bytes(randomRows(rng, s.width, 1)),
				"y": make([]byte, 4*n),
			}
			arch := [...]string{"sm_80", "sm_90", "sm_120", "sm_90"}[i]
			want, _ := runBytes(t, withStages(t, build(), 1), arch, bufs)
			for stages := 2; stages <= 3; stages++ {
				got, text := runBytes(t, withStages(t, build(), stages), arch, bufs)
				if !strings.Contains(text, fmt.Sprintf("// pipeline: %d stages", stages)) {
					t.Errorf("seed %d, stages %d: no loop was pipelined", seed, stages)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("seed %d, stages %d: output differs from the unpipelined kernel's", seed, stages)
				}
			}
		})
	}
}

// A pipelined loop says, after the pipeline pass, which loads it issues ahead
// and why the others are not: one reads at a loop-carried offset, and, with
// `ahead 0`, one gathers rows through indices loaded in the body; without the
// clause those indices are issued 2 iterations before the gather (Stages-1), into a
// ring of 5 slots.
func TestPipelineAnnotations(t *testing.T) {
	const src = `kernel mixed(%a: ptr<bf16> div 16 bytes 65536, %idx: ptr<i32> div 16 bytes 1024, %y: ptr<f32> div 16 bytes 1024) grid(1, 1, 1) warps 1 {
  %i = iota : tile<16xi32>
  %ri = cast %i : tile<16xi64>
  %c64 = const 64 : i64
  %rows = mul %ri, %c64 : tile<16xi64>
  %acc0 = const 0.0 : tile<16x16xf32>
  %off0 = const 0 : i64
  %lo = const 0 : i32
  %hi = const 4 : i32
  %acc, %off = for %it = %lo to %hi step 1 stages 3 iter(%x = %acc0, %o = %off0) {
    %c16 = const 16 : i32
    %k = mul %it, %c16 : i32
    %kw = cast %k : i64
    %dense = load %a[%rows, %kw] : tile<16x16xbf16>
    %shifted = load %a[%rows, %o] : tile<16x16xbf16>
    %ib = add %i, %k : tile<16xi32>
    %ix = load %idx[%ib] : tile<16xi32>
    %gx = cast %ix : tile<16xi64>
    %grows = mul %gx, %c64 : tile<16xi64>
    %gathered = load %a[%grows, %kw] : tile<16x16xbf16>
    %y1 = dot %dense, %shifted, %x : tile<16x16xf32>
    %y2 = dot %gathered, %dense, %y1 : tile<16x16xf32>
    %c8 = const 8 : i64
    %o2 = add %o, %c8 : i64
    yield %y2, %o2
  }
  %c16o = const 16 : i64
  %yr = mul %ri, %c16o : tile<16xi64>
  %z = const 0 : i64
  store %y[%yr, %z], %acc
}
`
	ahead, err := ir.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compile(ahead, target.MustLookup("sm_90"), Options{After: "pipeline", Check: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"pipeline: 3 stages, issued 2 iterations ahead: %dense %gathered; their indices 2 iterations before them: %ix\n",
		"%ix = load %idx[%ib] : tile<16xi32>  // recomputed, index tile issued 2 iterations before its tiles: ring of 5 slots",
		"%gathered = load %a[%grows, %kw] : tile<16x16xbf16>  // shared[0] pitch 0, pipelined: ring of 3 slots",
	} {
		if !strings.Contains(res.Dump, want) {
			t.Errorf("dump -after pipeline has no %q:\n%s", want, res.Dump)
		}
	}
	if fig, err := Measure(ahead, target.MustLookup("sm_90")); err != nil {
		t.Fatal(err)
	} else if full, err := Compile(ahead, target.MustLookup("sm_90"), Options{Check: true}); err != nil {
		t.Fatal(err)
	} else if fig.SharedBytes != full.Kernel.SharedBytes {
		t.Errorf("ahead 2: Measure says %d bytes of shared memory, the kernel has %d", fig.SharedBytes, full.Kernel.SharedBytes)
	}
	k, err := ir.Parse(strings.Replace(src, "stages 3 iter(", "stages 3 ahead 0 iter(", 1))
	if err != nil {
		t.Fatal(err)
	}
	res, err = Compile(k, target.MustLookup("sm_90"), Options{After: "pipeline", Check: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"stages 3 ahead 0 iter(%x = %acc0, %o = %off0) {  // ", "pipeline: 3 stages, issued 2 iterations ahead: %dense\n",
		"%dense = load %a[%rows, %kw] : tile<16x16xbf16>  // shared[0] pitch 0, pipelined: ring of 3 slots",
		"%shifted = load %a[%rows, %o] : tile<16x16xbf16>  // shared[0] pitch 0, not pipelined: address depends on the loop-carried %o",
		"not pipelined: address depends on the load %ix (ahead 0)",
	} {
		if !strings.Contains(res.Dump, want) {
			t.Errorf("dump -after pipeline has no %q:\n%s", want, res.Dump)
		}
	}
	// The figures count the ring: three slots of %dense beside the others.
	fig, err := Measure(k, target.MustLookup("sm_90"))
	if err != nil {
		t.Fatal(err)
	}
	full, err := Compile(k, target.MustLookup("sm_90"), Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if fig.SharedBytes != full.Kernel.SharedBytes {
		t.Errorf("Measure says %d bytes of shared memory, the kernel has %d", fig.SharedBytes, full.Kernel.SharedBytes)
	}
	k.Body.Ops[8].Stages, k.Body.Ops[8].Ahead = 0, 0
	one, err := Measure(k, target.MustLookup("sm_90"))
	if err != nil {
		t.Fatal(err)
	}
	// %dense: 16 rows of 48 bytes (16 bf16, odd pitch), 768 bytes, 128-aligned:
	// two more slots.
	if fig.SharedBytes != one.SharedBytes+2*768 {
		t.Errorf("3 stages: %d bytes of shared memory, 1 stage %d: want 2 x 768 more", fig.SharedBytes, one.SharedBytes)
	}
}

// gatherLoop is a decode-like loop: each iteration gathers 16 rows of a through a
// slice of indices loaded (and staged) before the loop, and multiplies them into
// an accumulator. The gather depends only on the induction variable and the
// staged indices, so a pipelined loop issues it ahead.
func gatherLoop(iters, stages int) string {
	return strings.NewReplacer("ITERS", fmt.Sprint(iters), "N16", fmt.Sprint(16*iters), "STAGES", fmt.Sprint(stages)).Replace(
		`kernel gather_dot(%a: ptr<bf16> div 16 bytes 8192, %idx: ptr<i32> div 16 bytes 4096, %b: ptr<bf16> div 16 bytes 512, %y: ptr<f32> div 16 bytes 1024) grid(1, 1, 1) warps 1 {
  %i16 = iota : tile<16xi32>
  %ri = cast %i16 : tile<16xi64>
  %c16l = const 16 : i64
  %brows = mul %ri, %c16l : tile<16xi64>
  %z = const 0 : i64
  %bt = load %b[%brows, %z] : tile<16x16xbf16>
  %iall = iota : tile<N16xi32>
  %ix = load %idx[%iall] : tile<N16xi32>
  %acc0 = const 0.0 : tile<16x16xf32>
  %lo = const 0 : i32
  %hi = const ITERS : i32
  %acc = for %it = %lo to %hi step 1 stages STAGES iter(%x = %acc0) {
    %c16 = const 16 : i32
    %s = mul %it, %c16 : i32
    %sl = slice %ix, %s, 16 : tile<16xi32>
    %g = cast %sl : tile<16xi64>
    %grows = mul %g, %c16l : tile<16xi64>
    %at = load %a[%grows, %z] : tile<16x16xbf16>
    %y2 = dot %at, %bt, %x : tile<16x16xf32>
    yield %y2
  }
  store %y[%brows, %z], %acc
}
`)
}

// TestPipelinedGather: gathers through indices staged before the loop are issued
// ahead (the staged indices made visible once, before the prologue), at 1..9
// iterations, fewer than the stages included; the output is bit for bit the
// unpipelined one, race checker on.
func TestPipelinedGather(t *testing.T) {
	for _, iters := range []int{1, 2, 3, 9} {
		t.Run(fmt.Sprint("iters", iters), func(t *testing.T) {
			seed := uint64(4200 + iters)
			rng := rand.New(rand.NewPCG(seed, 21))
			a := make([]byte, 8192)
			for i := 0; i < len(a); i += 2 {
				// bf16 of a random float in [-2, 2): the top half of its f32 bits.
				binary.LittleEndian.PutUint16(a[i:], uint16(math.Float32bits(float32(rng.Float64()*4-2))>>16))
			}
			b := a[:512:512]
			idx := make([]byte, 4096)
			for i, r := range rng.Perm(256)[:16*iters] {
				binary.LittleEndian.PutUint32(idx[4*i:], uint32(r))
			}
			bufs := map[string][]byte{"a": a, "b": b, "idx": idx, "y": make([]byte, 1024)}
			parse := func(stages int) *ir.Kernel {
				k, err := ir.Parse(gatherLoop(iters, stages))
				if err != nil {
					t.Fatal(err)
				}
				return k
			}
			sameAcrossStages(t, fmt.Sprintf("seed %d", seed), "sm_90", bufs, parse, true)
		})
	}
}

// indexLoop is gatherLoop with each iteration's indices loaded in its body (an
// index tile: loop.Ahead), the loop's clause being clause (" stages 3 ahead 1").
func indexLoop(iters int, clause string) string {
	src := strings.Replace(gatherLoop(iters, 1), " stages 1 iter(", clause+" iter(", 1)
	src = strings.Replace(src, fmt.Sprintf("  %%iall = iota : tile<%dxi32>\n  %%ix = load %%idx[%%iall] : tile<%dxi32>\n", 16*iters, 16*iters), "", 1)
	return strings.Replace(src, "    %sl = slice %ix, %s, 16 : tile<16xi32>\n", "    %ib = add %i16, %s : tile<16xi32>\n    %sl = load %idx[%ib] : tile<16xi32>\n", 1)
}

// TestPipelinedIndexTiles: gathers through indices loaded in the loop's body are
// issued ahead with their index tiles issued ahead of them (the lowering's depth
// and each stated one, 1..3 iterations), at 1..9 iterations, fewer than the
// stages plus the depth included; the output is bit for bit the unpipelined one,
// race checker and pending-copy checks on.
func TestPipelinedIndexTiles(t *testing.T) {
	for _, iters := range []int{1, 2, 3, 9} {
		for _, ahead := range []string{"", " ahead 1", " ahead 2", " ahead 3"} {
			t.Run(fmt.Sprint("iters", iters, ahead), func(t *testing.T) {
				seed := uint64(4300 + iters)
				rng := rand.New(rand.NewPCG(seed, 22))
				a := make([]byte, 8192)
				for i := 0; i < len(a); i += 2 {
					binary.LittleEndian.PutUint16(a[i:], uint16(math.Float32bits(float32(rng.Float64()*4-2))>>16))
				}
				idx := make([]byte, 4096)
				for i, r := range rng.Perm(256)[:16*iters] {
					binary.LittleEndian.PutUint32(idx[4*i:], uint32(r))
				}
				bufs := map[string][]byte{"a": a, "b": a[:512:512], "idx": idx, "y": make([]byte, 1024)}
				parse := func(stages int) *ir.Kernel {
					clause := fmt.Sprintf(" stages %d", stages)
					if stages > 1 {
						clause += ahead
					} else {
						clause += " ahead 0" // the reference: nothing issued ahead
					}
					k, err := ir.Parse(indexLoop(iters, clause))
					if err != nil {
						t.Fatal(err)
					}
					return k
				}
				sameAcrossStages(t, fmt.Sprintf("seed %d%s", seed, ahead), "sm_90", bufs, parse, true)
				if _, text := runBytes(t, parse(2), "sm_90", bufs); !strings.Contains(text, "// index tile %sl:") {
					t.Errorf("stages 2%s: the indices are not issued ahead as an index tile", ahead)
				}
				// One stage: only the indices run ahead of the iteration's own gathers.
				want, _ := runBytes(t, parse(1), "sm_90", bufs)
				k, err := ir.Parse(indexLoop(iters, " stages 1"+ahead))
				if err != nil {
					t.Fatal(err)
				}
				got, text := runBytes(t, k, "sm_90", bufs)
				if !strings.Contains(text, "// one stage: its loads' index tiles issued ahead") || strings.Contains(text, "// pipeline:") {
					t.Errorf("stages 1%s: the indices are not issued ahead of a loop of one stage", ahead)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("seed %d, stages 1%s: output differs from the loop with nothing issued ahead", seed, ahead)
				}
			})
		}
	}
}

// TestPipelinedRuntimeBounds: a pipelined loop whose end is a kernel argument
// and whose step is 2 runs 0 (no iteration: the prologue issues nothing), 1, 2,
// 3 and 9 iterations, fewer than the stages included, with the unpipelined
// kernel's output bit for bit and the race checker on. a holds exactly the rows
// the iterations read, so a stage issued past the end would read out of bounds.
func TestPipelinedRuntimeBounds(t *testing.T) {
	src := func(stages, aBytes int) string {
		return strings.NewReplacer("STAGES", fmt.Sprint(stages), "ABYTES", fmt.Sprint(aBytes)).Replace(`kernel strided_sum(%a: ptr<bf16> div 16 bytes ABYTES, %b: ptr<bf16> div 16 bytes 512, %y: ptr<f32> div 16 bytes 1024, %hi: i32) grid(1, 1, 1) warps 2 {
  %i16 = iota : tile<16xi32>
  %ri = cast %i16 : tile<16xi64>
  %c16l = const 16 : i64
  %brows = mul %ri, %c16l : tile<16xi64>
  %z = const 0 : i64
  %bt = load %b[%brows, %z] : tile<16x16xbf16>
  %acc0 = const 0.0 : tile<16x16xf32>
  %lo = const 1 : i32
  %acc = for %it = %lo to %hi step 2 stages STAGES iter(%x = %acc0) {
    %row0 = mul %it, %c16 : i32
    %r0 = cast %row0 : i64
    %rw = add %ri, %r0 : tile<16xi64>
    %rows = mul %rw, %c16l : tile<16xi64>
    %at = load %a[%rows, %z] : tile<16x16xbf16>
    %y2 = dot %at, %bt, %x : tile<16x16xf32>
    yield %y2
  }
  store %y[%brows, %z], %acc
}
`)
	}
	for _, iters := range []int{0, 1, 2, 3, 9} {
		t.Run(fmt.Sprint("iters", iters), func(t *testing.T) {
			seed := uint64(4300 + iters)
			rng := rand.New(rand.NewPCG(seed, 22))
			// Iterations 1, 3, ..., 2 iters - 1 read rows up to 32 iters - 1 of 32 bytes.
			a := make([]byte, max(1024*iters, 16))
			for i := 0; i < len(a); i += 2 {
				binary.LittleEndian.PutUint16(a[i:], uint16(math.Float32bits(float32(rng.Float64()*4-2))>>16))
			}
			hi := make([]byte, 4)
			binary.LittleEndian.PutUint32(hi, uint32(1+2*iters)) // iterations at 1, 3, ..., 2 iters - 1
			b := make([]byte, 512)
			for i := 0; i < len(b); i += 2 {
				binary.LittleEndian.PutUint16(b[i:], uint16(math.Float32bits(float32(rng.Float64()*4-2))>>16))
			}
			bufs := map[string][]byte{"a": a, "b": b, "y": make([]byte, 1024), "hi": hi}
			parse := func(stages int) *ir.Kernel {
				k, err := ir.Parse(strings.Replace(src(stages, len(a)), "  %acc0", "  %c16 = const 16 : i32\n  %acc0", 1))
				if err != nil {
					t.Fatal(err)
				}
				return k
			}
			sameAcrossStages(t, fmt.Sprintf("seed %d, %d iterations", seed, iters), "sm_80", bufs, parse, iters > 0)
		})
	}
}

// An `ahead L` the pipeline cannot honour is an error naming the clause, the loop and
// why: a loop whose gathers read indices staged before it (no index tile in its
// body), and one with no load at all.
func TestAheadUnhonoured(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{strings.Replace(gatherLoop(3, 2), " stages 2 iter(", " stages 2 ahead 1 iter(", 1), "ahead 1: the loop at %it cannot issue index tiles ahead: no load of its body reads an index tile"},
		{`kernel k(%x: ptr<f32> div 16 bytes 4096) grid(1, 1, 1) warps 1 {
  %lo = const 0 : i32
  %hi = const 8 : i32
  for %i = %lo to %hi step 1 ahead 2 {
  }
}
`, "ahead 2: the loop at %i cannot issue index tiles ahead: no load of its body reads an index tile"},
	} {
		k, err := ir.Parse(c.src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Compile(k, target.MustLookup("sm_90"), Options{Check: true})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "leave the clause out or write ahead 0") {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
}
