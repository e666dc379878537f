package kernels

import (
	"fmt"
	"math"
	"slices"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
	"github.com/ptxgen/ptxgen/plan"
	"github.com/ptxgen/ptxgen/target"
)

// MLAConfig configures the generation of mla_decode, DeepSeek-V4's sparse MLA
// decode: the call's shape (mla.Shape, the one the float64 reference also reads)
// and the choices the plan makes for it, each 0 for automatic.
type MLAConfig struct {
	mla.Shape
	// Split is the number of chunks the candidate list is split into across CTAs
	// (each writes a partial result that a combine kernel merges); 0 picks it from the
	// shape and SMs.
	Split int
	// SMs is the SM count the split is planned for; 0 means the target's.
	SMs int
	// HeadBlock is the number of heads per CTA, 8 (with the heads in the MMA's N dimension), 16, 32 or 64; 0 picks it (MLA).
	HeadBlock int
	// Tile is the number of candidates per loop iteration, 32 or 64; 0 picks it (MLA).
	Tile int
	// Warps64 is the size in warps of a 64-head CTA, 8 or 16; 0 picks it. With 8,
	// each warp holds twice the output columns at twice the registers.
	Warps64 int
	// Precision is the arithmetic of P·V: exact (the default, P in two bf16
	// terms) or bf16p (one bf16 term, half the tensor work of P·V).
	Precision MLAPrecision
	// ProducerWarps, when not 0, gives 64-head CTAs a producer role of that many
	// warps besides the math warps (warp roles, DESIGN.md): it gathers and
	// dequantizes each candidate tile into a ring of two slots that the math warps
	// read, so the math warps neither dequantize nor wait for the gathers.
	ProducerWarps int
	// ScoreWarps is the warps of 8-warp 64-head CTAs that compute the scores and
	// the online softmax: 4, a score role of the first four (design A2's q·k: each
	// computes a 32 x 32 quadrant of the tile, so Q and K are each read twice per
	// tile, not two and four times), while every warp dequantizes and computes
	// P·V; 8, every warp; 0 picks 4 where a CTA has 8 warps, 64-candidate tiles
	// and no producer role (measured 3-6% faster exact, 6-10% bf16p:
	// docs/perf-notes.md v15), every warp otherwise.
	ScoreWarps int
	// ScoreRows, when not 0, is the row groups of a 64-head CTA's score grid (1, 2
	// or 4 groups of 16-head multiples, the score warps split over the candidates
	// by the rest); 0 takes the grid that reads the fewest bytes, which at 8 warps
	// ties 4x2 against 2x4 and keeps 4x2. With computed fragments each row group
	// evaluates its candidates' Kᵀ fragments itself, so 2 converts each pair twice a
	// tile instead of 4 times (the sm_120 plan's H64 T256 loop: PTX 4812 -> 4240
	// lines, 168 -> 112 pair conversions per thread). Experimental (-score-rows):
	// not yet run on a GPU.
	ScoreRows int
	// SharedQ has the score dots of 16-head CTAs read their Q slices from shared
	// memory in every tile (-hold-q=false). By default the large kernels of those
	// CTAs (the ones whose scores split their reduction over the warps) hold them in
	// registers across the candidate loop (`a regs`, 32 registers per thread: 225-226
	// with ptxas 11.8 for sm_90, no spill): H8/H16 T256 -2.7..-3.1%, the sm_120 plan's
	// H64 T64 -2.3%, T64 -1..-2% (runs 61, 62). The small kernels (replicated scores,
	// latency-bound launches of one or two tiles per CTA) would hold 128 registers of
	// Q for no reuse, and 64-head CTAs spilled 856 bytes with it (-score-warps 8):
	// neither takes it.
	SharedQ bool
	// KFrags is where the decode's dots evaluate their K and V fragments from the
	// raw ring instead of a dequantized bf16 K tile in shared memory (-k-frags): the
	// heads-in-N CTA's (`a computed`: each register from its two e4m3 bytes, Vᵀ by
	// movmatrix of K's), the 16-head and the 64-head CTA's (`b computed`, Kᵀ and V).
	// KFragsAuto, the default, takes it for the heads-in-N family where it gives one
	// more CTA per SM (sm_90: 3 against 2, H8 T192 55.4 -> 46.2 us with the split that
	// fills them, T256 unchanged, run 70; sm_120: 2 at one stage against 1 at two, run
	// 71), and for the families of the rows that fill the SMs (mlaFill); KFragsOn
	// takes it for every family (the 16-head CTA measured 2-4% slower at T >= 64: run
	// 70; its Small kernels keep the bf16 tile), KFragsOff for none.
	KFrags MLAKFrags
	// KPairwise reads the 16-head CTA's computed fragments (KFrags, or the family of
	// the rows that fill the SMs) pair by pair, two 2-byte reads per thread and k16
	// step (-k-perm=false), instead of in kperm order (`b computed kperm`: one 4-byte
	// read; the decode's loop 1840 -> 1761 instructions in the emulator's count), the
	// default since run 88: the sm_120 plan's H16 T256 -0.6%, H64 T256 -2.2%, H16
	// K128+1152 T256 -0.9% (perf-notes v24). The 64-head CTA's computed fragments
	// are read pair by pair (kperm there not yet run on a GPU).
	KPairwise bool
	// Stages is the candidate tiles each family's loops keep in flight, 1 or 2; 0
	// picks it (mlaStaged). Fixing it lets a run weigh the second stage against the
	// CTAs per SM it costs (-stages), which the lowering's figures cannot.
	Stages int
	// Ahead is how many tiles before their gathers the candidate loops issue each
	// tile's indices where a CTA walks more candidates than it preloads (the loop's
	// `ahead` clause, ir.Op.Ahead: 0 the lowering's choice, max(stages-1, 1); ir.NoAhead
	// none, the gathers waiting for their indices in their own iteration; 1..3).
	Ahead int

	// fillsSMs builds the family that serves only calls whose rows fill the SMs
	// (mlaFill): no Small and no Partial kernels, named with "_kf".
	fillsSMs bool
}

// MLAKFrags is MLAConfig.KFrags, spelled as the flag takes it; the zero value is
// auto.
type MLAKFrags string

const (
	KFragsAuto MLAKFrags = ""
	KFragsOn   MLAKFrags = "true"
	KFragsOff  MLAKFrags = "false"
)

// String is the flag's spelling: auto, true or false.
func (k MLAKFrags) String() string {
	if k == KFragsAuto {
		return "auto"
	}
	return string(k)
}

// mla_decode tiling: a CTA takes one query row, a block of mlaHeadBlock heads (one
// m16 tile) and a range of candidate tiles of mlaTile candidates; K/V columns go in
// chunks of mlaChunk so that every dot and every output accumulator is one 64-wide
// slice (a chunk is also one fp8ds scale block). Four warps split each slice's
// columns, which keeps the fp32 output accumulator at 64 registers per thread for
// D = 512 and needs slice widths that are multiples of 32.
const (
	mlaTile = 32
	// mlaStages is how many candidate tiles a pipelined family keeps in flight
	// (mlaStaged).
	mlaStages   = 2
	mlaChunk    = 64
	mlaMaxSplit = 64
	// mlaPreloadIDs bounds the candidate indices a CTA loads before its loop (8 KB).
	mlaPreloadIDs = 2048
	// MaxMLAHeads etc. bound the configuration.
	MaxMLAHeads = 128
	MaxMLAK     = 1 << 20
	MaxMLADim   = 1024
	// MaxMLATokens: the decode and combine grids put rows in y (at most 65535).
	MaxMLATokens = target.MaxGridYZ
)

// Validate reports the first bad field, naming its flag and the accepted range.
func (c MLAConfig) Validate() error {
	bad := func(flag string, v any, want string) error {
		return &ConfigError{Flag: flag, Value: fmt.Sprint(v), Want: want}
	}
	// -score-warps and -score-rows place the scores of 8-warp 64-head CTAs without
	// a producer role.
	eightWarpScores := c.Wide() && c.Warps64 != 16 && c.ProducerWarps == 0
	noEightWarpScores := fmt.Sprintf("0 here: it places the scores of 8-warp 64-head CTAs without a producer role, and -heads %d -head-block %d -warps64 %d -producer-warps %d has none", c.H, c.HeadBlock, c.Warps64, c.ProducerWarps)
	switch {
	case c.T < 1 || c.T > MaxMLATokens:
		return bad("tokens", c.T, fmt.Sprintf("an integer in 1..%d (rows are the grid's y dimension, which CUDA limits to %d)", MaxMLATokens, target.MaxGridYZ))
	case c.MaxT < 0 || c.MaxT > MaxMLATokens:
		return bad("max-tokens", c.MaxT, fmt.Sprintf("0 (= -tokens) or an integer in 1..%d (rows are the grid's y dimension, which CUDA limits to %d)", MaxMLATokens, target.MaxGridYZ))
	case c.MaxT != 0 && c.T > c.MaxT:
		return bad("tokens", c.T, fmt.Sprintf("an integer in 1..%d (-max-tokens %d: the rows of a call are at most the capacity)", c.MaxT, c.MaxT))
	case c.H < 1 || c.H > MaxMLAHeads:
		return bad("heads", c.H, fmt.Sprintf("an integer in 1..%d", MaxMLAHeads))
	case c.Cache != mla.CacheFP8DS && c.Cache != mla.CacheBF16:
		return bad("cache", c.Cache, "fp8ds or bf16")
	case c.Cache == mla.CacheFP8DS && c.Nope != mla.FP8DSNope:
		return bad("nope", c.Nope, "448 with -cache fp8ds (the 584-byte layout is defined for 448+64; use -cache bf16 for other widths)")
	case c.Cache == mla.CacheFP8DS && c.Rope != mla.FP8DSRope:
		return bad("rope", c.Rope, "64 with -cache fp8ds (use -cache bf16 for other widths)")
	case c.Nope < 0 || c.Nope > MaxMLADim:
		return bad("nope", c.Nope, fmt.Sprintf("an integer in 0..%d", MaxMLADim))
	case c.Rope < 0 || c.Rope > MaxMLADim:
		return bad("rope", c.Rope, fmt.Sprintf("an integer in 0..%d", MaxMLADim))
	case c.D() < 1 || c.D() > MaxMLADim:
		return bad("nope", c.Nope, fmt.Sprintf("a width with 1 <= nope+rope <= %d (have %d)", MaxMLADim, c.D()))
	case CheckFloat32(c.Scale) != nil || c.Scale < 0:
		return bad("scale", c.Scale, "0 (1/sqrt(nope+rope)) or a positive number that is finite and nonzero as a float32")
	case c.Split < 0 || c.Split > mlaMaxSplit:
		return bad("split", c.Split, fmt.Sprintf("0 (automatic) or 1..%d", mlaMaxSplit))
	case c.SMs < 0 || c.SMs > 4096:
		return bad("sms", c.SMs, "0 (the target's) or 1..4096")
	case c.HeadBlock != 0 && c.HeadBlock != 8 && c.HeadBlock != 16 && c.HeadBlock != 32 && c.HeadBlock != 64:
		return bad("head-block", c.HeadBlock, "0 (automatic), 8 (the heads in the MMA's N dimension), 16, 32 or 64")
	case c.Tile != 0 && c.Tile != 32 && c.Tile != 64:
		return bad("tile", c.Tile, "0 (automatic), 32 or 64")
	case c.Warps64 != 0 && c.Warps64 != 8 && c.Warps64 != 16:
		return bad("warps64", c.Warps64, "0 (automatic), 8 or 16")
	case c.Warps64 != 0 && !c.Wide():
		return bad("warps64", c.Warps64, fmt.Sprintf("0 here: it sizes 64-head CTAs, and -heads %d -head-block %d has none (they need -head-block 64, or 0 with 64 heads or more)", c.H, c.HeadBlock))
	case c.ProducerWarps != 0 && c.ProducerWarps != 1 && c.ProducerWarps != 2 && c.ProducerWarps != 4:
		return bad("producer-warps", c.ProducerWarps, "0 (no producer role), 1, 2 or 4")
	case c.ProducerWarps != 0 && (!c.Wide() || c.Cache != mla.CacheFP8DS):
		return bad("producer-warps", c.ProducerWarps, fmt.Sprintf("0 here: the producer role serves 64-head CTAs of the fp8ds cache, and -heads %d -head-block %d -cache %s has none", c.H, c.HeadBlock, c.Cache))
	case c.ScoreWarps != 0 && c.ScoreWarps != 4 && c.ScoreWarps != 8:
		return bad("score-warps", c.ScoreWarps, "0 (automatic), 4 (a score role) or 8 (every warp)")
	case c.ScoreRows != 0 && c.ScoreRows != 1 && c.ScoreRows != 2 && c.ScoreRows != 4:
		return bad("score-rows", c.ScoreRows, "0 (automatic), 1, 2 or 4")
	case c.ScoreRows != 0 && !eightWarpScores:
		return bad("score-rows", c.ScoreRows, noEightWarpScores)
	case c.ScoreWarps != 0 && !eightWarpScores:
		return bad("score-warps", c.ScoreWarps, noEightWarpScores)
	case c.Stages != 0 && c.Stages != 1 && c.Stages != mlaStages:
		return bad("stages", c.Stages, fmt.Sprintf("0 (automatic), 1 or %d", mlaStages))
	case c.Ahead < ir.NoAhead || c.Ahead > ir.MaxAhead:
		return bad("ahead", c.Ahead, fmt.Sprintf("-1 (automatic), 0 (none) or 1..%d", ir.MaxAhead))
	case c.Stages != 0 && c.ProducerWarps != 0:
		return bad("stages", c.Stages, "0 with -producer-warps (the producer role's ring has its own slots)")
	case c.KFrags != KFragsAuto && c.KFrags != KFragsOn && c.KFrags != KFragsOff:
		return bad("k-frags", string(c.KFrags), "auto (the default), true or false")
	case c.Precision != PrecisionExact && c.Precision != PrecisionBF16P:
		return bad("precision", c.Precision, precisionWant)
	case len(c.Segments) < 1 || len(c.Segments) > 2:
		return bad("k0", len(c.Segments), "one or two segments")
	}
	for i, s := range c.Segments {
		switch {
		case s.K < 1 || s.K > MaxMLAK:
			return bad(fmt.Sprintf("k%d", i), s.K, fmt.Sprintf("an integer in 1..%d", MaxMLAK))
		case s.PageSize < 1 || s.PageSize > 1<<16:
			return bad(fmt.Sprintf("page%d", i), s.PageSize, "an integer in 1..65536")
		}
	}
	return nil
}

// Wide reports whether the configuration may run 64-head CTAs, the ones Warps64
// sizes: -head-block 64, or automatic with at least 64 heads (where the target's
// shared memory allows, mlaPlan).
func (c MLAConfig) Wide() bool { return c.HeadBlock == 64 || c.HeadBlock == 0 && c.H >= 64 }

// tiles is the number of candidate tiles of segment s.
func (c MLAConfig) tiles(s int) int { return ceilDiv(c.Segments[s].K, c.tileN()) }

// tileN is the candidates per tile. MLA resolves 0 (automatic) with mlaWidest
// before anything else reads it; 32 stands for it until then.
func (c MLAConfig) tileN() int {
	if c.Tile != 0 {
		return c.Tile
	}
	return mlaTile
}

func (c MLAConfig) totalTiles() int {
	n := 0
	for s := range c.Segments {
		n += c.tiles(s)
	}
	return n
}

// headBlocks is the number of head blocks per row.
func (c MLAConfig) headBlocks() int { return ceilDiv(c.H, c.headBlock()) }

// headBlock is the number of heads a CTA takes: 16 (one m16 tile, 4 warps), 32 or
// 64 (8 or 16 warps, each keeping the output accumulator at 64 registers per
// thread). mlaPlan resolves 0 (automatic) per family before anything else
// reads it; 16 stands for it until then.
func (c MLAConfig) headBlock() int {
	if c.HeadBlock != 0 {
		return c.HeadBlock
	}
	return 16
}

// mathWarps are the warps that compute (all of the CTA's without a producer
// role): four per m16 tile of heads, or Warps64 (default mlaWarps64) for 64-head
// CTAs.
func (c MLAConfig) mathWarps() int {
	if c.headBlock() == 64 {
		if c.Warps64 != 0 {
			return c.Warps64
		}
		return mlaWarps64
	}
	return 4 * max(c.headBlock(), 16) / 16
}

// scoreWarps are the warps of the score role (0: none) in CTAs of tile
// candidates: in 64-head CTAs, ScoreWarps' choice.
func (c MLAConfig) scoreWarps(tile int) int {
	if c.headBlock() != 64 {
		return 0
	}
	switch c.ScoreWarps {
	case 0:
		// Where it was measured: 8 warps, 64-candidate tiles.
		if c.mathWarps() == 8 && c.producerWarps() == 0 && tile == 64 {
			return mlaScoreWarps
		}
	case 4:
		return 4
	}
	return 0
}

// mlaScoreWarps is the score role of an 8-warp 64-head CTA: 4 warps. Against the
// scores on all 8 (run 48, serving pool, 2 alternating rounds), with each score
// warp computing 16 heads x 64 candidates: H64 T256 136.0 -> 133.8 us, H64 T64
// 46.5 -> 45.1, K2176 113.7 -> 108.9, H128 T256 259.7 -> 254.8, H128 T64 71.3 ->
// 70.4; bf16p 3.5-7.3% faster. In 32 x 32 quadrants (the layout's choice since
// run 51) another 1.5-2.4% exact, 2.2-3.2% bf16p.
const mlaScoreWarps = 4

// producerWarps are the warps of the producer role: ProducerWarps in 64-head CTAs.
func (c MLAConfig) producerWarps() int {
	if c.headBlock() == 64 {
		return c.ProducerWarps
	}
	return 0
}

// mlaWarps64 is the default size of a 64-head CTA: 8 warps, two per row group of
// 16 heads, each holding 16 heads x 256 output columns at 255 registers, instead of
// 16 warps at 128 registers. Per 64-candidate tile the CTA then reads 19% fewer
// ldmatrix bytes (each K/V fragment serves twice the columns) and issues 12% fewer
// instructions for the same work: H=64 T=256 171.5 -> 157.5 us, T=128 92.9 -> 85.0,
// T=64 55.6 -> 52.9, K=2176 144.2 -> 134.2, H=128 T=256 325.8 -> 299.3 (serving
// pools, perf-notes v7).
const mlaWarps64 = 8

// mlaHeadsInNMinRows is the least rows of a call that runs the heads-in-N family (8
// heads per CTA in the MMA's N dimension, where H <= 8) on a target whose 16-head CTAs
// are one per SM (sm_120's 99 KB; plan.Family.MinRows); where they are two or more the
// family takes the wide rule of 32-candidate tiles instead, from the rows that fill the
// SMs. Against 16-head CTAs (serving pool, 2 alternating rounds, H8, us): the sm_120
// plan T64 32.8 -> 27.3, T256 63.0 -> 58.5 (runs 62, 64), T8 13.1 -> 13.0, T1 10.1 ->
// 10.4 (run 62); the sm_90 plan T64 24.25 -> 24.75 (run 64), T96 38.4 -> 39.1, T128 37.9
// -> 37.2, T192 62.3 -> 57.4 (run 65), T256 63.1 -> 58.8 (run 64).
const mlaHeadsInNMinRows = 64

// mlaSmallMaxTiles is the most candidate tiles per CTA of a latency-bound launch
// that runs the Small kernels (replicated scores, plan.Rule.SmallMaxTiles). The
// latency rule alone sent the sm_120 plan's launches of one CTA per SM and 4-10
// tiles per CTA to them; the split kernels with all-reduced scores took H16 T64
// 32.3 -> 27.0 us, H16 T32 21.1 -> 18.6, H32 T32 32.0 -> 26.4, H64 T8 20.7 -> 17.8,
// H16 T64 K128+1152 55.0 -> 43.9 (run 76, sm_120's residency); launches of 1-2
// tiles per CTA (T1, T8 split 10-20) keep them (2 tiles: not measured without).
const mlaSmallMaxTiles = 2

// mlaWideMinTiles is the least number of candidate tiles per CTA at which
// the plan takes 64-head CTAs with 64-candidate tiles (plan.Rule.WideMinTiles).
const mlaWideMinTiles = 2

// dChunks are the 64-wide column slices of K/V: [start, width, tile width]. The
// last slice rounds its tile up to a multiple of 32 (four warps split it in n8
// tiles); its padding is masked off on load and never stored.
func (c MLAConfig) dChunks() [][3]int {
	var out [][3]int
	for d := 0; d < c.D(); d += mlaChunk {
		w := min(mlaChunk, c.D()-d)
		out = append(out, [3]int{d, w, roundUpInt(w, 32)})
	}
	return out
}

func roundUpInt(x, g int) int { return (x + g - 1) / g * g }

// MLA builds the mla_decode program for t: the decode kernels a call may run and the
// launch plan that picks one per call (plan.Rule, see mlaPlan), and when a call may
// split the candidates, one mla_combine_N kernel per split a call may have and the
// partial-result workspace.
func MLA(c MLAConfig, t target.Target) (*plan.Program, error) {
	p, _, err := MLADesign(c, t)
	return p, err
}

// MLADesign is MLA with each family's design: its variant, its entry in the launch
// plan and the lowering's figures for each of its kernels (what the plan chose it
// by, and what `dump -plan` prints).
func MLADesign(c MLAConfig, t target.Target) (*plan.Program, []MLAFamilyDesign, error) {
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	// The kernels take the rows at run time; everything fixed here is for the capacity.
	c.T, c.MaxT = c.Capacity(), 0
	rule, fams, err := c.mlaPlan(t)
	if err != nil {
		return nil, nil, err
	}
	designs := make([]MLAFamilyDesign, len(fams))
	p := &ir.Program{Name: "mla_decode"}
	for i, f := range rule.Families {
		designs[i] = MLAFamilyDesign{Variant: fams[i].variant, Family: f, Figures: map[string]lower.Figures{}}
		for _, name := range []string{f.Direct, f.DirectSmall, f.Partial, f.PartialSmall} {
			if name != "" {
				p.Kernels = append(p.Kernels, fams[i].kernels[name])
				designs[i].Figures[name] = fams[i].figures[name]
			}
		}
	}
	for _, cb := range rule.Combines {
		comb, err := mlaCombineKernel(c, cb)
		if err != nil {
			return nil, nil, err
		}
		p.Kernels = append(p.Kernels, comb)
	}
	if len(rule.Combines) > 0 {
		p.Workspace = []ir.Workspace{
			{Name: "ws_o", PerPart: int64(c.H) * int64(c.D()) * 4},
			{Name: "ws_lse", PerPart: int64(c.H) * 4},
		}
	}
	return &plan.Program{Program: p, Rule: rule}, designs, nil
}

// mlaEntry is one generated decode kernel of a family: Direct or Partial, for large
// or small (latency-bound) launches.
type mlaEntry struct {
	name     string
	partial  bool // writes a chunk's partial result for the combine; grid z is the split
	small    bool // for launches of about a wave: replicated score tiles
	maxSplit int  // the largest split a launch may have
}

// mlaFamily is one CTA shape of the decode: its variant, its plan entry, and its
// kernels, built and measured by the lowering.
type mlaFamily struct {
	variant MLAVariant
	fam     plan.Family
	kernels map[string]*ir.Kernel
	// figures are the lowering's figures of each kernel (lower.Measure); fits is
	// whether every kernel's shared memory fits the target.
	figures map[string]lower.Figures
	fits    bool
}

// mlaFamily builds the family of hb heads per CTA and tile candidates per tile on
// t: its Direct and Partial kernels (as -split allows) and their Small versions, kept
// only where the lowering replicates their score tiles (Figures.Replicated), since
// otherwise they would be the same code. Its CTAs per SM are the lowering's for the
// family's large kernels (the fewest of them).
func (c MLAConfig) mlaFamily(t target.Target, hb, tile, stages int) (*mlaFamily, error) {
	fc := c
	fc.HeadBlock, fc.Tile = hb, tile
	name := fmt.Sprintf("mla_decode_h%d", hb)
	if c.fillsSMs {
		name += "_kf"
	}
	variant := c.variant(hb, tile, stages)
	f := variant.family()
	f.HeadBlocks, f.Tiles = fc.headBlocks(), fc.totalTiles()
	f.Direct, f.Partial = name, name+"_split"
	if c.Split > 1 && f.Tiles > 1 {
		f.Direct = ""
	}
	if c.Split == 1 || f.Tiles == 1 || c.fillsSMs {
		f.Partial = ""
	}
	if !c.fillsSMs {
		f.DirectSmall, f.PartialSmall = suffix(f.Direct, "_small"), suffix(f.Partial, "_small")
	}
	// A lone row on a huge GPU has the most chunks a Partial kernel's launch may have.
	most := (&plan.Rule{Split: c.Split, MaxSplit: mlaMaxSplit}).SplitFor(f, 1, 1<<30)
	mf := &mlaFamily{variant: variant, kernels: map[string]*ir.Kernel{}, figures: map[string]lower.Figures{}, fits: true}
	for _, e := range []mlaEntry{
		{name: f.Direct}, {name: f.DirectSmall, small: true},
		{name: f.Partial, partial: true}, {name: f.PartialSmall, partial: true, small: true},
	} {
		if e.name == "" {
			continue
		}
		e.maxSplit = 1
		if e.partial {
			e.maxSplit = most
		}
		kv := mf.variant
		if e.small && !kv.HeadsInN {
			// Replicated scores would have every warp dequantize every dim of K
			// (T1 +21%, T8 +11%, the sm_120 plan's T64 1.7x: runs 70, 71).
			kv.KFrags = false
		}
		k, err := mlaDecodeKernel(fc, kv, e)
		if err != nil {
			return nil, err
		}
		fig, err := lower.Measure(k, t)
		if err != nil {
			return nil, err
		}
		if e.small && (!fig.Replicated || variant.HeadsInN) {
			// The large kernel's code (heads-in-N CTAs state their score grid, which
			// a small launch does not change): not generated.
			continue
		}
		mf.kernels[e.name], mf.figures[e.name] = k, fig
		mf.fits = mf.fits && fig.Fits
		if !e.small && (f.PerSM == 0 || fig.CTAsPerSM < f.PerSM) {
			f.PerSM = fig.CTAsPerSM
		}
	}
	for _, n := range []*string{&f.DirectSmall, &f.PartialSmall} {
		if mf.kernels[*n] == nil {
			*n = ""
		}
	}
	mf.fam = f
	return mf, nil
}

// mlaWidest is the family of hb heads per CTA with the largest candidate tile whose
// kernels fit t's shared memory: -tile when given, else 64 for 64-head CTAs where it
// fits (pipelined mlaStages deep where that fits: 226 KB on sm_90 with the
// copied tiles swizzled, 3-7% faster than one stage, runs 35, 37) and 32
// otherwise. A 64-head CTA is alone on its SM, and each k16 step of q·k
// loads a Q fragment for one n8 tile of candidates at 32 and for two at 64, so Q's
// shared memory traffic per candidate halves, as do the tiles' barriers and index
// round trips (H=64, T=256 on the H200: 166 against 234 us, docs/perf-notes.md v6).
// 16-head CTAs keep 32: at 64 their shared memory (120 KB) would leave one CTA per SM
// instead of three. The result may not fit (fits false) when nothing does.
func (c MLAConfig) mlaWidest(t target.Target, hb int) (*mlaFamily, error) {
	if c.Tile != 0 {
		return c.mlaStaged(t, hb, c.Tile)
	}
	if hb == 64 {
		if f, err := c.mlaStaged(t, hb, 64); err != nil || f.fits {
			return f, err
		}
	}
	return c.mlaStaged(t, hb, mlaTile)
}

// mlaStaged is the family of hb heads per CTA and tile candidates per tile with its
// candidate loops pipelined mlaStages deep (a tile's gathers issued one iteration
// ahead into a ring: the pipeline pass) where its kernels fit and, by the lowering's
// figures, keep two CTAs per SM or as many as the one-stage family has; otherwise one
// stage. On sm_90 the ring takes the 16-head family from 3 CTAs per SM to 2 and is
// still 10% faster (run 20: H16 T256 78.6 -> 70.4 us, docs/perf-notes.md v11); going
// from 2 to 1 (sm_80) would leave one warp per scheduler, unmeasured, so it is not
// taken. 64-head CTAs with 64-candidate tiles, alone on their SM either way, are
// pipelined wherever the ring fits (-tile 64 or automatic alike).
func (c MLAConfig) mlaStaged(t target.Target, hb, tile int) (*mlaFamily, error) {
	f, err := c.mlaStagedAs(t, hb, tile)
	if err != nil || c.KFrags != KFragsAuto || hb != 8 || !t.FP8Convert {
		return f, err
	}
	// KFragsAuto: the heads-in-N family computes its K fragments where that gives
	// it another CTA per SM, at its own stage choice: on sm_90 3 CTAs against 2 at
	// two stages (run 70), under sm_120's 99 KB 2 at one stage against 1 at two
	// (run 71, the H200 at sm_120's residency: H8 T256 74.7 -> 61.2 us, T64 27.2 ->
	// 25.9). Without the pair conversion (sm_80) each fragment costs a dozen
	// instructions more, unmeasured. The 16-head CTA is not taken: under sm_120's
	// limits its computed fragments hold 2 CTAs per SM (33 KB) against the tile's 1,
	// 11-20% faster where a launch's rows fill the SMs (run 82: H16 T256 77.9 ->
	// 69.2 us, H64 T64 77.2 -> 64.4, H64 T256 291.6 -> 232.7) but slower where it
	// splits (H16 T64 27.0 -> 27.9, H16 T8 13.0 -> 15.9: its Small kernels keep
	// the tile at the family's one stage): it is a family of its own for the rows
	// that fill the SMs (mlaFill).
	kc := c
	kc.KFrags = KFragsOn
	kf, err := kc.mlaStagedAs(t, hb, tile)
	if err != nil {
		return nil, err
	}
	if kf.fits && kf.fam.PerSM > f.fam.PerSM {
		return kf, nil
	}
	return f, nil
}

// mlaFill is a family of hb heads per CTA, beside base (the 16-head CTA of the bf16
// tile), for calls of -k-frags auto whose rows alone fill the SMs (plan.Rule's rule
// for 32-candidate tiles: rows x head blocks >= SMs): CTAs computing their K and V
// fragments from the raw ring at one stage, which such calls never split, so the
// family needs neither Partial nor Small kernels. nil where it is not taken.
//
// 16 heads: taken where that holds more of its CTAs per SM than base does, and at
// most 2. Under sm_120's 99 KB that is 2 CTAs per SM (33 KB, one stage) against the
// tile's 1: H16 T256 77.5 -> 68.2 us, H32 T256 149.0 -> 123.0, H64 T64 77.1 -> 63.4,
// H64 T256 291.5 -> 231.5, H16 K1152 T256 144.0 -> 123.6 (run 84, the H200 at
// sm_120's residency), and on rows past the preload too (run 87: H16 T256 K128+4096
// 447 -> 378 against the tile's two stages), while the calls that split (T64 and
// below at 16 heads) keep base's two stages and Small kernels, which run 82 measured
// faster there. On sm_90 both hold 2 (registers): not taken.
//
// 64 heads, where H >= 64 and no 64-head CTA of the bf16 tile fits (sm_120): the one
// 64-head CTA that fits 99 KB (101,120 bytes: one stage, 32-candidate tiles, the
// copied tiles swizzled), which reads each record once a row where the 16-head
// families read it once per head block.
func (c MLAConfig) mlaFill(t target.Target, base *mlaFamily, hb int) (*mlaFamily, error) {
	sms := t.SMs
	if c.SMs > 0 {
		sms = c.SMs
	}
	if c.KFrags != KFragsAuto || !t.FP8Convert || c.Cache != mla.CacheFP8DS || c.Split > 1 || c.Tile > mlaTile ||
		c.ProducerWarps > 0 || base.variant.HeadBlock != 16 || hb == 64 && c.H < 64 || c.Capacity()*ceilDiv(c.H, hb) < sms {
		return nil, nil
	}
	fc := c
	fc.KFrags, fc.fillsSMs = KFragsOn, true
	f, err := fc.mlaStagedAs(t, hb, mlaTile)
	if err != nil || !f.fits || hb == 16 && (f.fam.PerSM <= base.fam.PerSM || f.fam.PerSM > 2) {
		return nil, err
	}
	return f, nil
}

// mlaStagedAs is mlaStaged for c's KFrags as given (auto as off).
func (c MLAConfig) mlaStagedAs(t target.Target, hb, tile int) (*mlaFamily, error) {
	if c.Stages != 0 {
		return c.mlaFamily(t, hb, tile, c.Stages)
	}
	if hb == 64 && (tile == 64 || c.ProducerWarps > 0) {
		if two, err := c.mlaFamily(t, hb, tile, mlaStages); err != nil || two.fits {
			return two, err
		}
	}
	one, err := c.mlaFamily(t, hb, tile, 1)
	if err != nil || hb > 16 || !one.fits {
		return one, err
	}
	two, err := c.mlaFamily(t, hb, tile, mlaStages)
	if err != nil {
		return nil, err
	}
	if two.fits && two.fam.PerSM >= min(one.fam.PerSM, 2) {
		return two, nil
	}
	return one, nil
}

// mlaPlan is the launch plan on target t and the families it launches. The
// families are the 16-head CTAs and, where they fit and were not ruled out by
// -head-block, the 64-head CTAs; each has a Direct and, unless -split 1 or a single
// tile rules it out, a Partial kernel, and Small versions of both where the lowering
// replicates their score tiles (16-head CTAs). With -sms the SM count is known, and
// only the kernels some call of 1..capacity rows chooses are generated; otherwise any
// device may run it, and all are. Whether a family fits, its tile and its CTAs per SM
// are the lowering's figures for its kernels (lower.Measure), never an estimate.
//
// The rule's numbers were measured on the H200 (docs/perf-notes.md). The split
// (plan.Rule.SplitFor) picks the fastest split swept per shape, or one within 2%, at
// H=8/16/64 and T=1/8/64 (H=64, T=8 with three CTAs per SM: 10 chunks of 2 tiles,
// 22.5 us, against 31.3 us with the SM-count rule's 5 chunks of 4). 64-head CTAs
// dequantize each KV tile once for four times the heads but need 130-190 KB of shared
// memory (sm_80 and sm_90 only: one CTA per SM) and quarter the CTAs. With
// 32-candidate tiles (sm_80) they pay once the rows alone fill the SMs (T=256: 256
// against 280 us) and lose when the CTAs must be split to fill them (T=64, K=2176:
// 262 against 231 us). With 64-candidate tiles (sm_90), indices loaded once per CTA
// and 8-warp CTAs (mlaWarps64) they pay from 2 tiles per CTA when the CTAs fill at
// least half of the SMs (serving pools, v7: H=64 T=32, 3 tiles, 36.0 against 39.3 us;
// H=128 T=8, 2 tiles, 25.8 against 27.0) and lose at 1 (H=64 T=8: 20.2 against 19.6).
func (c MLAConfig) mlaPlan(t target.Target) (*plan.Rule, []*mlaFamily, error) {
	rule := &plan.Rule{Split: c.Split, MaxSplit: mlaMaxSplit, SMs: c.SMs, WideMinTiles: mlaWideMinTiles,
		SmallNum: target.LatencyBoundNum, SmallDen: target.LatencyBoundDen, SmallMaxTiles: mlaSmallMaxTiles}
	var fams []*mlaFamily
	add := func(hb int, onlyIfFits bool) error {
		f, err := c.mlaWidest(t, hb)
		if err != nil || onlyIfFits && !f.fits {
			return err
		}
		rule.Families = append(rule.Families, f.fam)
		fams = append(fams, f)
		return nil
	}
	switch {
	case c.HeadBlock != 0:
		if err := add(c.HeadBlock, false); err != nil {
			return nil, nil, err
		}
	default:
		if err := add(16, false); err != nil {
			return nil, nil, err
		}
		switch {
		case c.H >= 64:
			if err := add(64, true); err != nil {
				return nil, nil, err
			}
		case c.H <= 8 && c.Capacity() >= mlaHeadsInNMinRows:
			if err := add(8, true); err != nil {
				return nil, nil, err
			}
			if len(fams) == 2 && fams[0].fam.PerSM <= 1 {
				fams[1].fam.MinRows = mlaHeadsInNMinRows
				rule.Families[1].MinRows = mlaHeadsInNMinRows
			}
		}
		if len(fams) == 1 {
			// The families for the rows that fill the SMs, fewest head blocks last
			// (Rule.Choose takes the last that serves a call).
			for _, hb := range []int{16, 64} {
				f, err := c.mlaFill(t, fams[0], hb)
				if err != nil {
					return nil, nil, err
				}
				if f != nil {
					rule.Families = append(rule.Families, f.fam)
					fams = append(fams, f)
				}
			}
		}
	}
	rule.Combines = mlaCombines(rule)
	if c.SMs > 0 {
		used := map[string]bool{}
		for rows := 1; rows <= c.T; rows++ {
			ch, err := rule.Choose(rows, c.SMs)
			if err != nil {
				return nil, nil, fmt.Errorf("mla_decode: a generated plan misses a kernel: %v", err)
			}
			for _, n := range ch.Kernels {
				used[n] = true
			}
		}
		for i := range rule.Families {
			f := &rule.Families[i]
			for _, n := range []*string{&f.Direct, &f.DirectSmall, &f.Partial, &f.PartialSmall} {
				if !used[*n] {
					*n = ""
				}
			}
		}
		kept := rule.Combines[:0]
		for _, comb := range rule.Combines {
			if used[comb.Name] {
				kept = append(kept, comb)
			}
		}
		rule.Combines = kept
	}
	return rule, fams, nil
}

func suffix(name, s string) string {
	if name == "" {
		return ""
	}
	return name + s
}

// MLACall is the program of what a call of c.T rows runs (the kernels its plan
// chooses for t's SM count, or -sms's; the rest of the program generated for the
// capacity dropped), with the choice: what `dump -tokens T` shows and check runs.
func MLACall(c MLAConfig, t target.Target) (*plan.Program, plan.Choice, error) {
	p, ch, _, err := MLACallDesign(c, t)
	return p, ch, err
}

// MLACallDesign is MLACall with the design of the family the call runs (what the
// bench reports beside its time).
func MLACallDesign(c MLAConfig, t target.Target) (*plan.Program, plan.Choice, MLAFamilyDesign, error) {
	p, designs, err := MLADesign(c, t)
	if err != nil {
		return nil, plan.Choice{}, MLAFamilyDesign{}, err
	}
	ch, err := p.Rule.Choose(c.T, t.SMs)
	if err != nil {
		return nil, plan.Choice{}, MLAFamilyDesign{}, err
	}
	call := p.Only(ch.Kernels)
	if ch.Split == 1 {
		call.Workspace = nil
	}
	return call, ch, designs[ch.Family], nil
}

// MLAFamilyDesign is one family of CTAs of a generated mla_decode program: its
// variant, its entry in the launch plan, and the lowering's figures for each of its
// kernels, by name.
type MLAFamilyDesign struct {
	Variant MLAVariant
	Family  plan.Family
	Figures map[string]lower.Figures
}

const log2e = 1.4426950408889634

// mlaDecodeKernel is the attention kernel. Grid: (head blocks, rows, split).
// c's HeadBlock and Tile are d's; v says which of the family's kernels this is.
func mlaDecodeKernel(c MLAConfig, d MLAVariant, v mlaEntry) (*ir.Kernel, error) {
	if err := d.checkScoreRows(); err != nil {
		return nil, err
	}
	if v.small {
		d.HoldQ = false // replicated scores: 128 registers of Q for a tile or two (SharedQ)
	}
	b := ir.NewBuilder(v.name)
	b.SetGrid(c.headBlocks(), c.T, v.maxSplit)
	b.SetWarps(d.Warps)
	// role declares a role of warps warps from first, if warps > 0, and returns
	// what places ops on it (on every warp when there is none).
	role := func(name string, first, warps int) func(func()) {
		if warps == 0 {
			return func(f func()) { f() }
		}
		b.DeclareRole(name, first, warps)
		return func(f func()) { b.OnRole(name, f) }
	}
	// With a producer role, the loop's work is on math or load (the ops of
	// neither are index arithmetic every warp evaluates).
	mathWarps := 0
	if d.Producer > 0 {
		mathWarps = d.Warps - d.Producer
	}
	onMath, onLoad := role("math", 0, mathWarps), role("load", d.Warps-d.Producer, d.Producer)
	// The score role computes the scores and the softmax's row statistics; P·V,
	// the gathers and the dequantization stay on every warp (a phased loop:
	// DESIGN.md, warp roles).
	onScore := role("score", 0, d.Score)
	b.SetLatency(ir.LatencyLarge)
	if v.small {
		b.SetLatency(ir.LatencySmall)
	}
	D := c.D()
	i64 := ir.ScalarOf(ir.I64)
	HB, N := d.HeadBlock, d.Tile

	b.BindGrid(1, b.Param("rows", ir.ScalarOf(ir.I32), 1, 0))
	var split *ir.Value
	if v.partial {
		split = b.SplitParam("split")
		b.BindGrid(2, split)
	}
	q := b.ParamRows("q", ir.PtrTo(ir.BF16), 16, int64(c.H)*int64(D)*2)
	qst := b.Param("q_stride_t", i64, strideDiv(D), 0)
	qsh := b.Param("q_stride_h", i64, strideDiv(D), 0)
	b.Strided(q, int64(D), ir.StrideDim{Stride: "q_stride_h", Count: int64(c.H)}, ir.StrideDim{Stride: "q_stride_t", CountParam: "rows", CountDiv: 1})
	segs := segmentParams(b, c.Shape)
	var sink, out, lse, wsO, wsL *ir.Value
	if c.Sink && !v.partial {
		sink = b.Param("sink", ir.PtrTo(ir.F32), 4, int64(c.H)*4)
	}
	if !v.partial {
		out = b.ParamRows("out", ir.PtrTo(ir.BF16), 16, int64(c.H)*int64(D)*2)
		lse = b.ParamRows("lse", ir.PtrTo(ir.F32), 4, int64(c.H)*4)
	} else {
		wsO = b.ParamParts("ws_o", ir.PtrTo(ir.F32), 16, int64(c.H)*int64(D)*4)
		wsL = b.ParamParts("ws_lse", ir.PtrTo(ir.F32), 4, int64(c.H)*4)
	}

	h0 := b.Name(b.Mul(b.ProgramID(0), b.I32(int64(HB))), "h0")
	row := b.Name(b.ProgramID(1), "t")
	heads := b.Name(b.Add(h0, b.Iota(HB)), "heads")
	headOK := b.Name(b.Cmp(ir.CmpLT, heads, b.I32(int64(c.H))), "head_ok")
	row64 := b.Cast(row, ir.I64)
	qRows := b.Name(b.Add(b.Mul(row64, qst), b.Mul(b.Cast(heads, ir.I64), qsh)), "q_rows")

	chunks := c.dChunks()
	qs := make([]*ir.Value, len(chunks))
	for i, ch := range chunks {
		qs[i] = b.Name(b.Load2(q, qRows, b.I64(int64(ch[0])), ch[2], headOK, b.I32(int64(ch[1]))), fmt.Sprintf("q%d", i))
	}

	// Loop-carried softmax state: running max (log2 domain), sum, and one output
	// accumulator per column slice.
	var carried []*ir.Value
	onMath(func() {
		onScore(func() {
			carried = []*ir.Value{b.ConstFloat(ir.NegInf, ir.TileOf(ir.F32, HB)), b.ConstFloat(0, ir.TileOf(ir.F32, HB))}
		})
		for _, ch := range chunks {
			carried = append(carried, b.ConstFloat(0, d.outTile(ch[2])))
		}
	})
	scaleLog2 := c.SoftmaxScale() * log2e

	// This CTA's share of the concatenated tile list of the segments: chunks of
	// ceil(total / split) tiles; perMax is the largest a chunk may be.
	total := c.totalTiles()
	per, perMax := b.I32(int64(total)), total
	if v.partial {
		per = b.Name(b.Div(b.Add(split, b.I32(int64(total-1))), split), "chunk_tiles")
		perMax = ceilDiv(total, 2)
	}
	lo := b.Name(b.Mul(b.ProgramID(2), per), "tile_lo")
	hi := b.Name(b.Min(b.Add(lo, per), b.I32(int64(total))), "tile_hi")
	list := newCandidateList(b, c.Shape, segs, row64, N)
	// The CTA's candidate indices, loaded before the loop when they are few (one
	// round trip instead of one per tile, ahead of the gathers that depend on
	// them); the loop slices its tile out. A producer role always preloads them: a
	// tile's own index load would be a rank-1 shared tile both roles read, which no
	// ring hands over.
	var allIds *ir.Value
	if list.preloads(perMax) || d.Producer > 0 {
		allIds = list.preload(b, lo, hi, perMax*N)
	}
	ahead := c.Ahead
	if allIds != nil {
		ahead = 0 // no index tile to issue ahead
	}
	carried = b.ForAhead(lo, hi, 1, d.Stages, ahead, carried, func(j *ir.Value, st []*ir.Value) []*ir.Value {
		var ids *ir.Value
		if allIds != nil {
			ids = b.Slice(allIds, b.Mul(b.Sub(j, lo), b.I32(int64(N))), N)
		}
		t := list.tile(b, j, ids)
		var ks []*ir.Value
		onLoad(func() { ks = mlaLoadK(b, c, t) })
		var next []*ir.Value
		onMath(func() { next = mlaTileMath(b, d, onScore, qs, ks, t.valid, st, chunks, scaleLog2) })
		return next
	})
	// The epilogue reads the math warps' accumulators: it runs on them.
	onMath(func() {
		mlaEpilogue(b, c, d, v, onScore, carried, heads, headOK, row64, split, sink, out, lse, wsO, wsL)
	})
	return b.Finish()
}

// mlaTileMath is one candidate tile's math: scores, the online softmax and P·V,
// returning the next carried state. onScore places the scores and the softmax.
func mlaTileMath(b *ir.Builder, d MLAVariant, onScore func(func()), qs, ks []*ir.Value, valid *ir.Value, st []*ir.Value, chunks [][3]int, scaleLog2 float64) []*ir.Value {
	HB := d.HeadBlock
	var next []*ir.Value
	var alpha, pHi, pLo *ir.Value
	onScore(func() { next, alpha, pHi, pLo = mlaSoftmax(b, d, qs, ks, valid, st, chunks, scaleLog2) })
	for i, ch := range chunks {
		if d.HeadsInN {
			// Oᵀ = Vᵀ·Pᵀ: the slice's dims in M, the heads in N.
			scaled := b.Mul(st[2+i], d.perHead(b, alpha, ch[2]))
			vt := b.Trans(ks[i])
			grid := ir.DotSchedule{Warps: d.pvGrid(chunks, ch[2]), AHome: d.kHome()}
			o := b.ScheduledDot(vt, pHi, scaled, grid)
			if pLo != nil {
				o = b.ScheduledDot(vt, pLo, o, grid)
			}
			next = append(next, o)
			continue
		}
		scaled := b.Mul(st[2+i], b.Broadcast(alpha, 1, HB, ch[2]))
		grid := ir.DotSchedule{Warps: d.pvGrid(chunks, ch[2]), BHome: d.kBHome(), KPerm: d.kBPerm()}
		o := b.ScheduledDot(pHi, ks[i], scaled, grid)
		if pLo != nil {
			o = b.ScheduledDot(pLo, ks[i], o, grid)
		}
		next = append(next, o)
	}
	return next
}

// mlaSoftmax is a tile's scores and online softmax: the next running max and
// sum, the rescale factor of the output, and P in one or two bf16 terms.
func mlaSoftmax(b *ir.Builder, d MLAVariant, qs, ks []*ir.Value, valid *ir.Value, st []*ir.Value, chunks [][3]int, scaleLog2 float64) (next []*ir.Value, alpha, pHi, pLo *ir.Value) {
	HB, N := d.HeadBlock, d.Tile
	// Scores in the log2 domain; invalid candidates get -inf by selection, so
	// nothing loaded for them (zero-filled anyway) can matter.
	if d.HeadsInN {
		return mlaSoftmaxHeadsInN(b, d, qs, ks, valid, st, scaleLog2)
	}
	sc2 := b.ConstFloat(0, ir.TileOf(ir.F32, HB, N))
	for i, ch := range chunks {
		if s := d.scoreSchedule(ch[2]); s != nil {
			sc2 = b.ScheduledDot(qs[i], b.Trans(ks[i]), sc2, *s)
		} else {
			sc2 = b.Dot(qs[i], b.Trans(ks[i]), sc2)
		}
	}
	sc2 = b.Mul(sc2, b.F32(scaleLog2))
	sc2 = b.Name(b.Select(b.Broadcast(valid, 0, HB, N), sc2, b.F32(ir.NegInf)), "scores")
	m, l := st[0], st[1]
	mNew := b.Max(m, b.Reduce("max", sc2, 1))
	// A row with no valid candidate yet keeps max -inf; subtract 0 instead so
	// exp2 sees -inf - 0 = -inf, never -inf - -inf = NaN.
	mUse := b.Select(b.Cmp(ir.CmpEQ, mNew, b.F32(ir.NegInf)), b.F32(0), mNew)
	p := b.Exp2(b.Sub(sc2, b.Broadcast(mUse, 1, HB, N)))
	alpha = b.Exp2(b.Sub(m, mUse))
	lNew := b.Add(b.Mul(l, alpha), b.Reduce("sum", p, 1))
	// P goes to the tensor cores as two bf16 terms, hi + lo: one bf16 P
	// (8 bits) lets sum_j p_j v_j drift by up to 2^-9 of sum_j |p_j v_j|,
	// which fails the spec's output thresholds when the terms cancel;
	// with the residual term the error is about 2^-17 of it. bf16p
	// keeps the one term, as FlashMLA does, for its own tolerance.
	pHi = b.Name(b.Cast(p, ir.BF16), "p_hi")
	if d.Precision == PrecisionExact {
		pLo = b.Name(b.Cast(b.Sub(p, b.Cast(pHi, ir.F32)), ir.BF16), "p_lo")
	}
	next = []*ir.Value{b.Name(mNew, "m_next"), b.Name(lNew, "l_next")}
	return next, alpha, pHi, pLo
}

// mlaSoftmaxHeadsInN is mlaSoftmax with the heads in the MMA's N dimension: Sᵀ =
// K·Qᵀ, candidates in M (a tile of 32 is two m16 tiles) and the 8 heads one n8
// tile, so nothing is padded; the row statistics reduce Sᵀ's columns, and Pᵀ is the
// B operand of Oᵀ = Vᵀ·Pᵀ.
func mlaSoftmaxHeadsInN(b *ir.Builder, d MLAVariant, qs, ks []*ir.Value, valid *ir.Value, st []*ir.Value, scaleLog2 float64) (next []*ir.Value, alpha, pHi, pLo *ir.Value) {
	HB, N := d.HeadBlock, d.Tile
	sc2 := b.ConstFloat(0, ir.TileOf(ir.F32, N, HB))
	// Every warp computes the whole tile over its quarter of the dims, then the
	// partial sums are all-reduced, as the prototype does (perf-notes v18).
	all := ir.DotSchedule{Warps: [2]int{1, 1}, Replicate: d.Warps, SplitK: d.Warps, AHome: d.kHome()}
	for i := range qs {
		sc2 = b.ScheduledDot(ks[i], b.Trans(qs[i]), sc2, all)
	}
	sc2 = b.Mul(sc2, b.F32(scaleLog2))
	sc2 = b.Name(b.Select(b.Broadcast(valid, 1, N, HB), sc2, b.F32(ir.NegInf)), "scores")
	m, l := st[0], st[1]
	mNew := b.Max(m, b.Reduce("max", sc2, 0))
	mUse := b.Select(b.Cmp(ir.CmpEQ, mNew, b.F32(ir.NegInf)), b.F32(0), mNew)
	p := b.Exp2(b.Sub(sc2, b.Broadcast(mUse, 0, N, HB)))
	alpha = b.Exp2(b.Sub(m, mUse))
	lNew := b.Add(b.Mul(l, alpha), b.Reduce("sum", p, 0))
	pHi = b.Name(b.Cast(p, ir.BF16), "p_hi")
	if d.Precision == PrecisionExact {
		pLo = b.Name(b.Cast(b.Sub(p, b.Cast(pHi, ir.F32)), ir.BF16), "p_lo")
	}
	next = []*ir.Value{b.Name(mNew, "m_next"), b.Name(lNew, "l_next")}
	return next, alpha, pHi, pLo
}

// mlaEpilogue normalizes the carried output and stores it with its LSE (the
// sink's gate applied), or the partial output and log2 LSE for the combine.
// onScore places the row statistics, where the softmax computed them.
func mlaEpilogue(b *ir.Builder, c MLAConfig, d MLAVariant, v mlaEntry, onScore func(func()), carried []*ir.Value, heads, headOK, row64, split, sink, out, lse, wsO, wsL *ir.Value) {
	D, chunks := c.D(), c.dChunks()
	var nonEmpty, scale, lse2 *ir.Value
	onScore(func() {
		m, l := b.Name(carried[0], "m"), b.Name(carried[1], "l")
		nonEmpty = b.Name(b.Cmp(ir.CmpGT, l, b.F32(0)), "non_empty")
		scale = b.Select(nonEmpty, b.Rcp(l), b.F32(0))
		lse2 = b.Name(b.Add(m, b.Log2(l)), "lse2")
		if !v.partial && sink != nil {
			// The sink's gate g = 1 / (1 + e^(sink - lse)).
			sk := b.Load1(sink, heads, headOK)
			g := b.Rcp(b.Add(b.F32(1), b.Exp2(b.Sub(b.Mul(sk, b.F32(log2e)), lse2))))
			scale = b.Mul(scale, g)
		}
	})
	if !v.partial {
		// Final output: out = o / l * g.
		outRows := b.Add(b.Mul(row64, b.I64(int64(c.H)*int64(D))), b.Mul(b.Cast(heads, ir.I64), b.I64(int64(D))))
		for i, ch := range chunks {
			o := b.Select(d.perHead(b, nonEmpty, ch[2]), b.Mul(carried[2+i], d.perHead(b, scale, ch[2])), b.F32(0))
			b.Store2(out, outRows, b.I64(int64(ch[0])), headOK, b.I32(int64(ch[1])), d.outRows(b, b.Cast(o, ir.BF16)))
		}
		onScore(func() {
			lseNat := b.Select(nonEmpty, b.Mul(lse2, b.F32(math.Ln2)), b.F32(math.Inf(1)))
			b.Store1(lse, b.Add(b.Mul(row64, b.I64(int64(c.H))), b.Cast(heads, ir.I64)), headOK, lseNat)
		})
	} else {
		// Partial output for the combine: o / l and the log2 LSE (-inf when empty).
		part := b.Add(b.Mul(row64, b.Cast(split, ir.I64)), b.Cast(b.ProgramID(2), ir.I64))
		wsRows := b.Add(b.Mul(part, b.I64(int64(c.H)*int64(D))), b.Mul(b.Cast(heads, ir.I64), b.I64(int64(D))))
		for i, ch := range chunks {
			o := d.outRows(b, b.Mul(carried[2+i], d.perHead(b, scale, ch[2])))
			b.Store2(wsO, wsRows, b.I64(int64(ch[0])), headOK, b.I32(int64(ch[1])), o)
		}
		onScore(func() {
			b.Store1(wsL, b.Add(b.Mul(part, b.I64(int64(c.H))), b.Cast(heads, ir.I64)), headOK,
				b.Select(nonEmpty, lse2, b.F32(ir.NegInf)))
		})
	}
}

// mlaLoadK gathers one candidate tile of K (= V) as bf16 column slices in shared
// memory: fp8ds slices are dequantized exactly (e4m3 x 2^(e-127) is exact in bf16),
// the rope slice is loaded as is; a bf16 cache is loaded directly.
func mlaLoadK(b *ir.Builder, c MLAConfig, t candidateTile) []*ir.Value {
	var ks []*ir.Value
	if c.Cache == mla.CacheBF16 {
		kp := b.Bitcast(t.cache, ir.BF16)
		rows := b.Add(b.Div(t.pageBase, b.I64(2)), b.Mul(t.slot, b.I64(int64(c.D()))))
		for i, ch := range c.dChunks() {
			ks = append(ks, b.Name(b.Load2(kp, rows, b.I64(int64(ch[0])), ch[2], t.valid, b.I32(int64(ch[1]))), fmt.Sprintf("k_%d", i)))
		}
		return ks
	}
	rec := b.Name(b.Add(t.pageBase, b.Mul(t.slot, b.I64(mla.FP8DSRecordBytes))), "rec")
	// All of the tile's gathers are issued before any dequantization, so their
	// latencies overlap: the 8 scale bytes of every candidate first (every slice's
	// dequantization reads them, and reading a tile waits for the gathers issued
	// before it), then the 7 e4m3 slices and the rope slice.
	scaleRows := b.Add(b.Add(t.pageBase, t.scaleBlock), b.Mul(t.slot, b.I64(mla.FP8DSScaleBytes)))
	scales := b.Name(b.Load2(t.cache, scaleRows, b.I64(0), mla.FP8DSScaleBytes, t.valid, nil), "scales")
	nope := b.Bitcast(t.cache, ir.E4M3)
	var raws []*ir.Value
	for i := 0; i < mla.FP8DSNope/mla.FP8DSScaleBlock; i++ {
		raws = append(raws, b.Load2(nope, rec, b.I64(int64(i*mla.FP8DSScaleBlock)), mla.FP8DSScaleBlock, t.valid, nil))
	}
	rope := b.Bitcast(t.cache, ir.BF16)
	ropeRows := b.Add(b.Div(rec, b.I64(2)), b.I64(mla.FP8DSNope/2))
	ropeTile := b.Name(b.Load2(rope, ropeRows, b.I64(0), mla.FP8DSRope, t.valid, nil), "rope")
	for i, raw := range raws {
		e := b.Cast(b.Column(scales, i), ir.I32)
		// 2^(e-127) built from its bits: exact for the exponents 1..254 a UE8M0 byte
		// meaningfully holds.
		scale := b.Bitcast(b.Shl(e, b.I32(23)), ir.F32)
		k := b.Mul(b.Cast(raw, ir.F32), b.Broadcast(scale, 1, c.tileN(), mla.FP8DSScaleBlock))
		ks = append(ks, b.Name(b.Cast(k, ir.BF16), fmt.Sprintf("k_%d", i)))
	}
	ks = append(ks, ropeTile)
	return ks
}

// mlaCombines are the combine kernels the rule's Partial kernels need: one per split
// a call may have (plan.Rule.Splits; with -split, one per family at most).
func mlaCombines(rule *plan.Rule) []plan.Combine {
	var counts []int
	for _, f := range rule.Families {
		if f.Partial != "" {
			counts = append(counts, rule.Splits(f)...)
		}
	}
	slices.Sort(counts)
	var out []plan.Combine
	for _, n := range slices.Compact(counts) {
		out = append(out, plan.Combine{Chunks: n, Name: fmt.Sprintf("mla_combine_%d", n)})
	}
	return out
}

// mlaCombineKernel merges the cb.Chunks partials of one (row, head) per CTA: the
// partials are weighted by 2^(lse_s - max), and the sink gate is applied here.
// Grid: (heads, rows); each thread handles elements d = tid, tid + 128, ....
// Chunk s of row t is part t x chunks + s of the workspace.
func mlaCombineKernel(c MLAConfig, cb plan.Combine) (*ir.Kernel, error) {
	split := cb.Chunks
	b := ir.NewBuilder(cb.Name)
	b.SetGrid(c.H, c.T, 1)
	b.SetWarps(4)
	D := c.D()
	b.BindGrid(1, b.Param("rows", ir.ScalarOf(ir.I32), 1, 0))
	// The split is fixed, so the workspace's parts are rows x split: sizes per row.
	wsO := b.ParamRows("ws_o", ir.PtrTo(ir.F32), 16, int64(split)*int64(c.H)*int64(D)*4)
	wsL := b.ParamRows("ws_lse", ir.PtrTo(ir.F32), 4, int64(split)*int64(c.H)*4)
	var sink *ir.Value
	if c.Sink {
		sink = b.Param("sink", ir.PtrTo(ir.F32), 4, int64(c.H)*4)
	}
	out := b.ParamRows("out", ir.PtrTo(ir.BF16), 16, int64(c.H)*int64(D)*2)
	lse := b.ParamRows("lse", ir.PtrTo(ir.F32), 4, int64(c.H)*4)
	h := b.Cast(b.ProgramID(0), ir.I64)
	t := b.Cast(b.ProgramID(1), ir.I64)
	H := int64(c.H)
	part := func(s int) *ir.Value { // (row t, chunk s)'s (row, head) index in the lse workspace
		return b.Add(b.Mul(b.Add(b.Mul(t, b.I64(int64(split))), b.I64(int64(s))), b.I64(H)), h)
	}
	lses := make([]*ir.Value, split)
	m := b.F32(ir.NegInf)
	for s := range split {
		lses[s] = b.Load1(wsL, part(s), nil)
		m = b.Max(m, lses[s])
	}
	mUse := b.Select(b.Cmp(ir.CmpEQ, m, b.F32(ir.NegInf)), b.F32(0), m)
	d64 := b.Cast(b.Iota(D), ir.I64)
	total := b.F32(0)
	acc := b.ConstFloat(0, ir.TileOf(ir.F32, D))
	for s := range split {
		w := b.Exp2(b.Sub(lses[s], mUse))
		total = b.Add(total, w)
		o := b.Load1(wsO, b.Add(b.Mul(part(s), b.I64(int64(D))), d64), nil)
		acc = b.Add(acc, b.Mul(o, w))
	}
	nonEmpty := b.Cmp(ir.CmpGT, total, b.F32(0))
	lse2 := b.Add(mUse, b.Log2(total))
	scale := b.Select(nonEmpty, b.Rcp(total), b.F32(0))
	if sink != nil {
		sk := b.Load1(sink, h, nil)
		g := b.Rcp(b.Add(b.F32(1), b.Exp2(b.Sub(b.Mul(sk, b.F32(log2e)), lse2))))
		scale = b.Mul(scale, g)
	}
	o := b.Select(nonEmpty, b.Mul(acc, scale), b.F32(0))
	outBase := b.Mul(b.Add(b.Mul(t, b.I64(H)), h), b.I64(int64(D)))
	b.Store1(out, b.Add(outBase, d64), nil, b.Cast(o, ir.BF16))
	b.Store1(lse, b.Add(b.Mul(t, b.I64(H)), h), nil, b.Select(nonEmpty, b.Mul(lse2, b.F32(math.Ln2)), b.F32(math.Inf(1))))
	return b.Finish()
}

// segParams are one candidate segment's kernel parameters.
type segParams struct{ cache, pageStride, slots, idx, idxStride, length *ir.Value }

// segmentParams declares each segment's parameters, by the names check binds
// (bindSegments), so the decode and its gather ceiling take the same buffers.
func segmentParams(b *ir.Builder, sh mla.Shape) []segParams {
	i64 := ir.ScalarOf(ir.I64)
	segs := make([]segParams, len(sh.Segments))
	for s, sc := range sh.Segments {
		pageDiv := 16
		if sh.Cache == mla.CacheBF16 {
			pageDiv = strideDiv(sh.D()) * 2
		}
		segs[s].cache = b.Param(fmt.Sprintf("cache%d", s), ir.PtrTo(ir.U8), 16, 0)
		segs[s].pageStride = b.Param(fmt.Sprintf("page_stride%d", s), i64, pageDiv, 0)
		// The pool's size in slots (pages x page size): an index outside [0, slots)
		// is invalid like -1, so a buggy indexer's index is never a load.
		segs[s].slots = b.Param(fmt.Sprintf("slots%d", s), ir.ScalarOf(ir.I32), 1, 0)
		segs[s].idx = b.ParamRows(fmt.Sprintf("idx%d", s), ir.PtrTo(ir.I32), 4, int64(sc.K)*4)
		segs[s].idxStride = b.Param(fmt.Sprintf("idx_stride%d", s), i64, 1, 0)
		if sc.HasLen {
			segs[s].length = b.ParamRows(fmt.Sprintf("len%d", s), ir.PtrTo(ir.I32), 4, 4)
		}
		// A row's K indices, rows idx_stride apart; the pool's pages (slots / page
		// size of them, the last one whole), page_stride bytes apart.
		b.Strided(segs[s].idx, int64(sc.K), ir.StrideDim{Stride: fmt.Sprintf("idx_stride%d", s), CountParam: "rows", CountDiv: 1})
		b.Strided(segs[s].cache, sh.PageBytes(sc.PageSize), ir.StrideDim{Stride: fmt.Sprintf("page_stride%d", s), CountParam: fmt.Sprintf("slots%d", s), CountDiv: int64(sc.PageSize)})
	}
	return segs
}
