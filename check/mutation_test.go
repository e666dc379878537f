package check

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
)

// Mutation tests (issue 3 item 4): take the PTX a user would ship, plant one bug
// in its text, parse it back and check that running it fails, either because
// the emulator reports an error (race, pending cp.async byte, out-of-bounds
// access, ...) or because the outputs leave the tolerance. The unmutated text
// must pass. Each mutation finds its site by a fixed rule over the printed
// module, so the test follows the generator when its code changes, and fails if
// the rule no longer finds a site where one is expected.

// A mutation edits the lines of a printed module. apply returns the edited lines
// and a description of each site it changed, or no sites when the rule finds none.
type mutation struct {
	name  string
	rule  string
	apply func(lines []string) (out []string, sites []string)
}

var (
	reMMA       = regexp.MustCompile(`^mma\.sync\.\S+ (\{[^}]*\}), (\{[^}]*\}), (\{[^}]*\}), (\{[^}]*\});$`)
	rePack      = regexp.MustCompile(`^mov\.b32 (%r\d+), \{(%h\d+), (%h\d+)\};$`)
	reCvtPack   = regexp.MustCompile(`^(cvt\.rn\.bf16x2\.f32) (%r\d+), (%f\d+), (%f\d+);$`)
	reGuarded   = regexp.MustCompile(`^@!?%p\d+ `)
	reBackBra   = regexp.MustCompile(`^(?:@!?%p\d+ )?bra(?:\.uni)? (\$\w+);$`)
	reCpAsync   = regexp.MustCompile(`^((?:@!?%p\d+ )?cp\.async\.(?:ca|cg)\.shared\.global\S* \[[^\]]+\], \[[^\]]+\], (\d+)), (%r\d+);$`)
	reBarSync0  = regexp.MustCompile(`^bar\.sync 0;$`)
	reWaitGroup = regexp.MustCompile(`^cp\.async\.wait_group 0;$`)
)

// ptxStmt is a line's statement text without indentation; "" for blank lines,
// comments, labels and directives.
func ptxStmt(line string) string {
	s := strings.TrimSpace(line)
	if s == "" || strings.HasPrefix(s, "//") || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ":") {
		return ""
	}
	return s
}

// lineIndent returns line's leading white space.
func lineIndent(line string) string {
	return line[:len(line)-len(strings.TrimLeft(line, " \t"))]
}

func siteOf(lines []string, i int) string {
	return fmt.Sprintf("line %d: %s", i+1, strings.TrimSpace(lines[i]))
}

// firstPTXStmt is the index of the first statement matching re, -1 if none.
func firstPTXStmt(lines []string, re *regexp.Regexp) int {
	for i, l := range lines {
		if s := ptxStmt(l); s != "" && re.MatchString(s) {
			return i
		}
	}
	return -1
}

// replaceFirstPTX rewrites the first statement matching re with edit.
func replaceFirstPTX(re *regexp.Regexp, edit func(s string) string) func([]string) ([]string, []string) {
	return func(lines []string) ([]string, []string) {
		i := firstPTXStmt(lines, re)
		if i < 0 {
			return lines, nil
		}
		s := siteOf(lines, i)
		lines[i] = lineIndent(lines[i]) + edit(ptxStmt(lines[i]))
		return lines, []string{s}
	}
}

// deletePTXLine removes line i.
func deletePTXLine(lines []string, i int) ([]string, []string) {
	s := siteOf(lines, i)
	return append(lines[:i:i], lines[i+1:]...), []string{s}
}

// swapInVec swaps elements a and b of the vector operand vec ("{%r1, %r2, ...}").
func swapInVec(vec string, a, b int) string {
	regs := strings.Split(strings.Trim(vec, "{}"), ", ")
	if a >= len(regs) || b >= len(regs) {
		return vec
	}
	regs[a], regs[b] = regs[b], regs[a]
	return "{" + strings.Join(regs, ", ") + "}"
}

// swapMMAOperand swaps registers a and b of operand op (1 = A, 2 = B) of the
// first mma.sync.
func swapMMAOperand(op, a, b int) func([]string) ([]string, []string) {
	return replaceFirstPTX(reMMA, func(s string) string {
		m := reMMA.FindStringSubmatchIndex(s)
		lo, hi := m[2*op+2], m[2*op+3]
		return s[:lo] + swapInVec(s[lo:hi], a, b) + s[hi:]
	})
}

// loopClosingBarriers returns the line of each loop's closing barrier, in the
// order of the loops' backward branches: the last `bar.sync` between a backward
// branch and the label it jumps to.
func loopClosingBarriers(lines []string) []int {
	var bars []int
	labels := map[string]int{}
	for i, l := range lines {
		if tl := strings.TrimSpace(l); strings.HasPrefix(tl, "$") && strings.HasSuffix(tl, ":") {
			labels[strings.TrimSuffix(tl, ":")] = i
		}
		m := reBackBra.FindStringSubmatch(ptxStmt(l))
		if m == nil {
			continue
		}
		top, ok := labels[m[1]]
		if !ok {
			continue // a forward branch
		}
		for j := i - 1; j > top; j-- {
			if strings.HasPrefix(ptxStmt(lines[j]), "bar.sync") {
				bars = append(bars, j)
				break
			}
		}
	}
	return bars
}

// loopEndBarrier deletes the barrier closing the first loop.
func loopEndBarrier(lines []string) ([]string, []string) {
	if bars := loopClosingBarriers(lines); len(bars) > 0 {
		return deletePTXLine(lines, bars[0])
	}
	return lines, nil
}

// fullSrcSize replaces the register src-size of cp.async instructions with their
// cp-size: the copy then always reads cp-size bytes and zero-fills nothing. With
// all, every such cp.async; else the first.
func fullSrcSize(all bool) func([]string) ([]string, []string) {
	return func(lines []string) ([]string, []string) {
		var sites []string
		for i, l := range lines {
			m := reCpAsync.FindStringSubmatch(ptxStmt(l))
			if m == nil {
				continue
			}
			sites = append(sites, siteOf(lines, i))
			lines[i] = lineIndent(l) + m[1] + ", " + m[2] + ";"
			if !all {
				break
			}
		}
		return lines, sites
	}
}

// dropGuards removes the guard of statements matching re (which must match the
// guard): the first one, or with all every one.
func dropGuards(re *regexp.Regexp, all bool) func([]string) ([]string, []string) {
	return func(lines []string) ([]string, []string) {
		var sites []string
		for i, l := range lines {
			s := ptxStmt(l)
			if s == "" || !re.MatchString(s) {
				continue
			}
			sites = append(sites, siteOf(lines, i))
			lines[i] = lineIndent(l) + reGuarded.ReplaceAllString(s, "")
			if !all {
				break
			}
		}
		return lines, sites
	}
}

func deleteFirstPTX(re *regexp.Regexp) func([]string) ([]string, []string) {
	return func(lines []string) ([]string, []string) {
		if i := firstPTXStmt(lines, re); i >= 0 {
			return deletePTXLine(lines, i)
		}
		return lines, nil
	}
}

var (
	reGuardedSt = regexp.MustCompile(`^@!?%p\d+ st\.global`)
	reGuardedLd = regexp.MustCompile(`^@!?%p\d+ ld\.global`)
	reGuardedCp = regexp.MustCompile(`^@!?%p\d+ cp\.async\.`)
)

var mutations = []mutation{
	{"mma_A_swap", "the first mma.sync: swap registers a0 and a1 of the A operand (rows g and g+8 of k 0..7)",
		swapMMAOperand(1, 0, 1)},
	{"mma_B_swap", "the first mma.sync: swap registers b0 and b1 of the B operand (k 0..7 and k 8..15)",
		swapMMAOperand(2, 0, 1)},
	{"pack_swap", "the first `mov.b32 %r, {%h, %h}`: swap the halves",
		replaceFirstPTX(rePack, func(s string) string { return rePack.ReplaceAllString(s, "mov.b32 $1, {$3, $2};") })},
	{"cvt_pack_swap", "the first `cvt.rn.bf16x2.f32 %r, %fa, %fb`: swap the two sources (which half each lands in)",
		replaceFirstPTX(reCvtPack, func(s string) string { return reCvtPack.ReplaceAllString(s, "$1 $2, $4, $3;") })},
	{"st_guard", "the first guarded st.global: drop the guard", dropGuards(reGuardedSt, false)},
	{"st_guard_all", "every guarded st.global: drop the guard", dropGuards(reGuardedSt, true)},
	{"ld_guard", "the first guarded ld.global: drop the guard", dropGuards(reGuardedLd, false)},
	{"ld_guard_all", "every guarded ld.global: drop the guard", dropGuards(reGuardedLd, true)},
	{"cp_guard", "the first guarded cp.async: drop the guard", dropGuards(reGuardedCp, false)},
	{"bar_first", "the first `bar.sync 0` (before the first read of a shared tile): delete it",
		deleteFirstPTX(reBarSync0)},
	{"bar_loop_end", "the barrier closing the first loop (the last bar.sync between its label and its backward branch): delete it",
		loopEndBarrier},
	{"wait_group", "the first `cp.async.wait_group 0`: delete it", deleteFirstPTX(reWaitGroup)},
	{"ldmatrix_drop_trans", "the first ldmatrix with .trans: drop .trans",
		replaceFirstPTX(regexp.MustCompile(`^(?:@!?%p\d+ )?ldmatrix\.\S*\.trans\.`), func(s string) string { return strings.Replace(s, ".trans.", ".", 1) })},
	{"ldmatrix_add_trans", "the first ldmatrix without .trans: add .trans",
		replaceFirstPTX(regexp.MustCompile(`^(?:@!?%p\d+ )?ldmatrix\.sync\.aligned\.m8n8\.x\d\.shared\.`), func(s string) string {
			return strings.Replace(s, ".shared.", ".trans.shared.", 1)
		})},
	{"srcsize_first", "the first cp.async with a register src-size: make it the constant cp-size",
		fullSrcSize(false)},
	{"srcsize_all", "every cp.async with a register src-size: make it the constant cp-size",
		fullSrcSize(true)},
}

// mutationCase is one program the mutations are planted in.
type mutationCase struct {
	name  string
	build func() (*Case, error)
	// absent names the mutations whose rule finds no site in this program, and
	// why; every other rule must find one.
	absent map[string]string
	// survives names the mutations that are equivalent on this case's inputs
	// (no check can see them: the program still computes the right outputs
	// without touching memory it must not), and why. They are run and logged;
	// every other mutation must be caught.
	survives map[string]string
}

const (
	noPack     = "gemm's A operands come from ldmatrix, never packed from registers"
	noCvtPack  = "gemm converts its outputs one element at a time (cvt.rn.bf16.f32 or none)"
	noCpAsync  = "K=33: rows are only 2-byte aligned, so tiles are loaded by element copies, not cp.async"
	noGuardCp  = "every thread issues the same number of chunks: no cp.async needs a guard"
	noGuardLd  = "every global load is a cp.async (zero-filled through src-size), none is a guarded ld.global"
	finiteGarb = "the load only fills padded K columns of A with finite values from the next row, " +
		"and B's padded K rows are zero, so they add exactly 0; the strided variant of this case (NaN between K and lda) catches it"
	srcsizeA440 = "the first cp.async's only empty copies are A columns 440..447 in the last K step; their source is " +
		"redirected to A's base (finite data, never the NaN gap) and B's padded K rows are zero, so they add exactly 0"
)

var mutationCases = []mutationCase{
	{
		name: "gemm_17x9x33",
		build: func() (*Case, error) {
			return GEMM(kernels.GEMMConfig{M: 17, N: 9, K: 33, Out: ir.BF16}, tgt("sm_80"), 11)
		},
		absent: map[string]string{"pack_swap": noPack, "cvt_pack_swap": noCvtPack, "cp_guard": noCpAsync, "wait_group": noCpAsync,
			"srcsize_first": noCpAsync, "srcsize_all": noCpAsync},
		survives: map[string]string{"ld_guard": finiteGarb},
	},
	{
		name: "gemm_17x9x33_lda40_ldb12",
		build: func() (*Case, error) {
			return GEMMStrided(kernels.GEMMConfig{M: 17, N: 9, K: 33, Out: ir.F32}, tgt("sm_90"), 14, 40, 12)
		},
		absent: map[string]string{"pack_swap": noPack, "cvt_pack_swap": noCvtPack, "cp_guard": noCpAsync, "wait_group": noCpAsync,
			"srcsize_first": noCpAsync, "srcsize_all": noCpAsync},
	},
	{
		name: "gemm_100x72x448",
		build: func() (*Case, error) {
			return GEMM(kernels.GEMMConfig{M: 100, N: 72, K: 448, Out: ir.F32}, tgt("sm_90"), 12)
		},
		absent: map[string]string{"pack_swap": noPack, "cvt_pack_swap": noCvtPack, "ld_guard": noGuardLd, "ld_guard_all": noGuardLd},
		survives: map[string]string{
			"srcsize_first": "the first cp.async copies A columns k0..k0+7 of rows 0..31 of the CTA tile: K=448 is a multiple of 32 and " +
				"every such row is < 100, so its src-size is always 16 and the mutation changes nothing",
			"srcsize_all": "K=448 pads nothing; the only empty copies are A rows >= 100, whose source is redirected to A's base " +
				"(finite data): they only feed C rows >= 100, which are never stored",
		},
	},
	{
		name: "gemm_100x72x440",
		build: func() (*Case, error) {
			return GEMM(kernels.GEMMConfig{M: 100, N: 72, K: 440, Out: ir.BF16}, tgt("sm_120"), 13)
		},
		absent:   map[string]string{"pack_swap": noPack, "cvt_pack_swap": noCvtPack, "ld_guard": noGuardLd, "ld_guard_all": noGuardLd},
		survives: map[string]string{"srcsize_first": srcsizeA440},
	},
	{
		name: "gemm_100x72x440_lda448_ldb80",
		build: func() (*Case, error) {
			return GEMMStrided(kernels.GEMMConfig{M: 100, N: 72, K: 440, Out: ir.F32}, tgt("sm_90"), 15, 448, 80)
		},
		absent:   map[string]string{"pack_swap": noPack, "cvt_pack_swap": noCvtPack, "ld_guard": noGuardLd, "ld_guard_all": noGuardLd},
		survives: map[string]string{"srcsize_first": srcsizeA440},
	},
	{
		name: "mla_T1_H16_K64",
		build: func() (*Case, error) {
			cfg := kernels.MLAConfig{Shape: mla.Shape{T: 1, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true, Segments: []mla.Segment{{K: 64, PageSize: 64, HasLen: true}}}, Split: 1, HeadBlock: 16}
			return mlaPoisonedPage0(cfg, "sm_90", golden.MLAGenOptions{Seed: 1, InvalidFrac: 0.1, Poison: true})
		},
		survives: map[string]string{
			"st_guard":      "T=1 and H=16 fill the CTA's head block: every store guard is true",
			"st_guard_all":  "T=1 and H=16 fill the CTA's head block: every store guard is true",
			"ld_guard":      "the first guarded load reads idx for candidate < K; K=64 is a multiple of the 32-candidate tile, so the guard is always true",
			"ld_guard_all":  "the guarded loads read idx (staged once per tile) for candidates < K and the sink for heads < H; K=64 and H=16 fill their tiles, so every guard is true",
			"srcsize_first": "the first cp.async copies q; H=16 fills the head block, so its src-size is always 16",
		},
	},
	{
		name: "mla_T2_H24_K64+100",
		build: func() (*Case, error) {
			cfg := kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 24, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true, Segments: []mla.Segment{{K: 64, PageSize: 64, HasLen: true}, {K: 100, PageSize: 64, HasLen: true}}}}
			cfg.Split, cfg.HeadBlock = 1, 16
			return mlaPoisonedPage0(cfg, "sm_80", golden.MLAGenOptions{Seed: 1, InvalidFrac: 0.1, Poison: true})
		},
		survives: map[string]string{
			"st_guard": "the first guarded store writes row g of the m16 head tile: heads 0..7 and 16..23, all < H=24, " +
				"so its guard is always true (rows g+8 are other instructions)",
			"ld_guard":      "the first guarded load reads idx0 for candidate < K0; K0=64 is a multiple of the 32-candidate tile, so the guard is always true",
			"srcsize_first": "the first cp.async copies q; the empty copies (heads 24..31) read q's base instead, and those heads are never stored",
		},
	},
}

// mlaPoisonedPage0 builds an mla_decode case with the first seed from opt.Seed on
// whose inputs page 0 of every cache is poisoned (0xFF: NaN as e4m3 and bf16).
// The kernel points every empty cp.async (a masked candidate) at the cache's
// base, so a copy that stops zero-filling then feeds NaN into the masked rows,
// where it is visible: 0 * NaN is NaN in the P*V product.
func mlaPoisonedPage0(cfg kernels.MLAConfig, target string, opt golden.MLAGenOptions) (*Case, error) {
	strides := golden.PackedMLAConfig(cfg.Shape, make([]int, len(cfg.Segments)))
	for range 500 {
		c, err := MLA(cfg, tgt(target), opt)
		if err != nil {
			return nil, err
		}
		ok := true
		for i, s := range strides.Layouts {
			b := c.Buffers[fmt.Sprintf("cache%d", i)]
			ok = ok && len(b) >= s.PageStride && !slices.ContainsFunc(b[:s.PageStride], func(x byte) bool { return x != 0xFF })
		}
		if ok {
			return c, nil
		}
		opt.Seed++
	}
	return nil, fmt.Errorf("no seed in 500 from %d poisons page 0 of every cache", opt.Seed-500)
}

// prepareMutationCase builds mc and checks that its unmutated text passes.
func prepareMutationCase(t *testing.T, mc mutationCase) (*Case, string) {
	t.Helper()
	c, err := mc.build()
	if err != nil {
		t.Fatal(err)
	}
	text := c.Compiled.Module.Print()
	orig, err := withText(c, text)
	if err != nil {
		t.Fatalf("the printed module does not parse: %v", err)
	}
	if got := orig.Compiled.Module.Print(); got != text {
		t.Fatalf("Print(Parse(Print(m))) differs from Print(m)")
	}
	if v := runEmu(orig); v.kind != verdictPass {
		t.Fatalf("the unmutated PTX fails (%s):\n%s", v.kind, v.detail)
	}
	return c, text
}

func TestMutations(t *testing.T) {
	for _, mc := range mutationCases {
		t.Run(mc.name, func(t *testing.T) {
			t.Parallel()
			c, text := prepareMutationCase(t, mc)
			for _, m := range mutations {
				t.Run(m.name, func(t *testing.T) {
					lines, sites := m.apply(strings.Split(text, "\n"))
					why, absent := mc.absent[m.name]
					if len(sites) == 0 {
						if absent {
							t.Skipf("no site (%s): %s", m.rule, why)
						}
						t.Fatalf("the rule finds no site: %s", m.rule)
					}
					if absent {
						t.Errorf("the rule finds a site (%s), but the case says there is none: %s", sites[0], why)
					}
					mutated := strings.Join(lines, "\n")
					if mutated == text {
						t.Fatalf("the mutation left the text unchanged at %s", sites[0])
					}
					mcase, err := withText(c, mutated)
					if err != nil {
						t.Fatalf("the mutated text does not parse: %v", err)
					}
					v := runEmu(mcase)
					where := sites[0]
					if len(sites) > 1 {
						where = fmt.Sprintf("%s (and %d more)", where, len(sites)-1)
					}
					reason, survives := mc.survives[m.name]
					switch {
					case v.kind == verdictPass && survives:
						t.Logf("survives, as expected (equivalent on these inputs): %s\n  site: %s", reason, where)
					case v.kind == verdictPass:
						t.Errorf("NOT CAUGHT: %s\n  rule: %s\n  site: %s", c.Name, m.rule, where)
					case survives:
						t.Logf("caught by %s although the case lists it as surviving (%s): update the table\n  site: %s\n  %s",
							v.kind, reason, where, shortDetail(v))
					default:
						t.Logf("caught by %s\n  site: %s\n  %s", v.kind, where, shortDetail(v))
					}
				})
			}
		})
	}
}

// TestMutationEveryBarrier deletes each `bar.sync` of each program in turn: every
// one must be caught, the barriers closing mla_decode's loop bodies included (once
// redundant there; every case has caught them since session 12 or before).
func TestMutationEveryBarrier(t *testing.T) {
	for _, mc := range mutationCases {
		if strings.Contains(mc.name, "lda") {
			continue // same code as the dense case
		}
		t.Run(mc.name, func(t *testing.T) {
			t.Parallel()
			c, text := prepareMutationCase(t, mc)
			lines := strings.Split(text, "\n")
			n := 0
			counts := map[string]int{}
			for i, l := range lines {
				if !strings.HasPrefix(ptxStmt(l), "bar.sync") {
					continue
				}
				n++
				mutated := strings.Join(append(append([]string{}, lines[:i]...), lines[i+1:]...), "\n")
				mcase, err := withText(c, mutated)
				if err != nil {
					t.Fatalf("the mutated text does not parse: %v", err)
				}
				v := runEmu(mcase)
				counts[v.kind]++
				if v.kind == verdictPass {
					t.Errorf("NOT CAUGHT: deleting %s", siteOf(lines, i))
				}
			}
			if n == 0 {
				t.Fatal("no bar.sync in the program")
			}
			t.Logf("%d barriers deleted one at a time: %v", n, counts)
		})
	}
}
