package kernels_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// TestMLACacheOffsetsAre64Bit: pools pass 4 GiB (the GPU check runs 4.5 GiB per
// segment), so nothing derived from a cache pointer or a page stride may pass
// through a 32-bit instruction on its way to an address. The test follows every
// value computed from param_cache* and param_page_stride* through the PTX of the
// decode kernel (fp8ds and bf16, split and unsplit, 16- and 64-head CTAs) and
// fails on a 32-bit operation or a narrowing cvt of one; it also requires that
// both reach the source of a cp.async gather, so it cannot pass vacuously.
func TestMLACacheOffsetsAre64Bit(t *testing.T) {
	base := kernels.MLAConfig{Shape: mla.Shape{T: 1, H: 64, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true, Segments: []mla.Segment{{K: 128, PageSize: 64, HasLen: true}, {K: 512, PageSize: 53, HasLen: true}}}}
	bf16 := base
	bf16.Cache, bf16.Nope = mla.CacheBF16, 512
	wide := base
	wide.T, wide.HeadBlock = 64, 64
	for _, tc := range []struct {
		name   string
		cfg    kernels.MLAConfig
		split  int
		target string
	}{
		{"fp8ds", base, 1, "sm_120"},
		{"fp8ds split", base, 0, "sm_90"},
		{"fp8ds 64 heads", wide, 1, "sm_90"},
		{"bf16", bf16, 1, "sm_80"},
		{"bf16 split", bf16, 4, "sm_90"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Split = tc.split
			p, _, err := kernels.MLACall(c, target.MustLookup(tc.target))
			if err != nil {
				t.Fatal(err)
			}
			comp, err := lower.CompileProgram(p.Program, p.Sequences(), target.MustLookup(tc.target))
			if err != nil {
				t.Fatal(err)
			}
			fn := comp.Module.Funcs[0]
			if !strings.HasPrefix(fn.Name, "mla_decode_") {
				t.Fatalf("first kernel is %s", fn.Name)
			}
			for _, src := range []string{"param_cache", "param_page_stride"} {
				reached, bad := follow64(fn, src)
				for _, b := range bad {
					t.Errorf("%s: a value derived from %s* goes through a 32-bit instruction: %s", tc.name, src, b)
				}
				if reached == 0 {
					t.Errorf("%s: no cp.async source is derived from %s*: the test follows nothing", tc.name, src)
				}
			}
			// The check can fail: a page stride offset computed in 32 bits, as
			// "mul.lo.s32 page, stride" after a narrowing cvt would be, is caught.
			text := comp.Module.Print()
			ld := regexp.MustCompile(`ld\.param\.s64 (%rd\d+), \[param_page_stride0\];`).FindStringSubmatch(text)
			if ld == nil {
				t.Fatal("no ld.param of page_stride0")
			}
			mutant, err := ptx.Parse(strings.Replace(text, ld[0], ld[0]+"\n\tcvt.u32.u64 %r0, "+ld[1]+";\n\tmul.lo.s32 %r0, %r0, %r0;", 1))
			if err != nil {
				t.Fatal(err)
			}
			if _, bad := follow64(mutant.Funcs[0], "param_page_stride"); len(bad) == 0 {
				t.Error("a narrowing cvt of page_stride0 went unnoticed")
			}
		})
	}
}

var bits64 = regexp.MustCompile(`\.[sub]64$`)

// follow64 taints the registers loaded from the parameters whose names start with
// prefix and everything computed from them (to a fixed point, for loops). It
// returns how many cp.async sources are tainted and every instruction that takes
// a tainted operand but is not a 64-bit operation (a narrowing cvt included).
func follow64(fn *ptx.Func, prefix string) (reached int, bad []string) {
	tainted := map[ptx.Reg]bool{}
	uses := func(o ptx.Operand) bool {
		switch v := o.(type) {
		case ptx.Reg:
			return tainted[v]
		case ptx.Addr:
			r, ok := v.Base.(ptx.Reg)
			return ok && tainted[r]
		case ptx.Vec:
			for _, e := range v {
				if r, ok := e.(ptx.Reg); ok && tainted[r] {
					return true
				}
			}
		}
		return false
	}
	seenBad := map[string]bool{}
	for changed := true; changed; {
		changed = false
		reached = 0
		for _, s := range fn.Body {
			in, ok := s.(*ptx.Instr)
			if !ok || len(in.Args) == 0 {
				continue
			}
			if strings.HasPrefix(in.Op, "ld.param.") {
				if a, ok := in.Args[1].(ptx.Addr); ok && strings.HasPrefix(fmt.Sprint(a.Base), prefix) {
					if r := in.Args[0].(ptx.Reg); !tainted[r] {
						tainted[r], changed = true, true
					}
				}
				continue
			}
			if strings.HasPrefix(in.Op, "cp.async") {
				if len(in.Args) > 1 && uses(in.Args[1]) {
					reached++
				}
				continue
			}
			src := false
			for _, a := range in.Args[1:] {
				src = src || uses(a)
			}
			if !src {
				continue
			}
			isStore := strings.HasPrefix(in.Op, "st.")
			is64 := bits64.MatchString(in.Op) || strings.HasPrefix(in.Op, "cvt.") && bits64.MatchString(strings.TrimSuffix(in.Op, in.Op[strings.LastIndex(in.Op, "."):]))
			if strings.HasPrefix(in.Op, "ld.") || strings.HasPrefix(in.Op, "setp.") && bits64.MatchString(in.Op) || isStore {
				// A load through a tainted address, or a 64-bit compare.
				continue
			}
			if !is64 {
				if line := fmt.Sprint(in.Op, " ", in.Args); !seenBad[line] {
					seenBad[line] = true
					bad = append(bad, line)
				}
				continue
			}
			if r, ok := in.Args[0].(ptx.Reg); ok && !tainted[r] {
				tainted[r], changed = true, true
			}
		}
	}
	return reached, bad
}
