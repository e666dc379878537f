package check

import (
	"fmt"
	"strings"

	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	arch "github.com/ptxgen/ptxgen/target"
)

// ExplainCompileError turns a lowering error of configuration c on target into one
// that names the flags that caused it, when the cause is a choice the user forced:
// mla_decode's -head-block and -tile decide the CTA's shared memory, and a forced
// 64-head CTA does not fit the 99 KB of sm_120. The automatic choice (0) always
// fits the target, so when it compiles, the forced flags are the cause, and the
// error lists the forced values that do compile. Any other error is returned as it
// is. It compiles a few variants, on this error path only.
func ExplainCompileError(c kernels.Config, target arch.Target, err error) error {
	if err == nil {
		return err
	}
	v, verr := c.Value()
	cfg, ok := v.(kernels.MLAConfig)
	if verr != nil || !ok || (cfg.HeadBlock == 0 && cfg.Tile == 0) {
		return err
	}
	compiles := func(hb, tile int) bool {
		v := cfg
		v.HeadBlock, v.Tile = hb, tile
		p, err := kernels.MLA(v, target)
		if err != nil {
			return false
		}
		_, err = lower.CompileProgram(p.Program, p.Sequences(), target)
		return err == nil
	}
	if compiles(cfg.HeadBlock, cfg.Tile) || !compiles(0, 0) {
		return err // not the forced choice on this target
	}
	var forced, fits []string
	if cfg.HeadBlock != 0 {
		forced = append(forced, fmt.Sprintf("-head-block %d", cfg.HeadBlock))
	}
	if cfg.Tile != 0 {
		forced = append(forced, fmt.Sprintf("-tile %d", cfg.Tile))
	}
	for _, hb := range []int{64, 32, 16} {
		for _, tile := range []int{64, 32} {
			if compiles(hb, tile) {
				fits = append(fits, fmt.Sprintf("-head-block %d -tile %d", hb, tile))
			}
		}
	}
	fits = append(fits, "-head-block 0 -tile 0 (automatic)")
	flag := "head-block"
	value := fmt.Sprint(cfg.HeadBlock)
	if cfg.HeadBlock == 0 {
		flag, value = "tile", fmt.Sprint(cfg.Tile)
	}
	return &kernels.ConfigError{Flag: flag, Value: value + " on " + target.String(),
		Want: fmt.Sprintf("a CTA that fits %s (%s: %v); these fit: %s", target, strings.Join(forced, " "), err, strings.Join(fits, ", "))}
}
