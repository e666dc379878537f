package check

import (
	"fmt"
	"runtime"

	"github.com/ptxgen/ptxgen/emu"
)

// collectBeforeBytes is the size of a case's buffers from which Run collects garbage
// before copying them.
const collectBeforeBytes = 16 << 20

// Emulator runs cases on the PTX emulator: the PTX text is parsed back, exactly as
// shipped, and every kernel of the program runs in order on one emulated memory.
type Emulator struct{}

// Run implements Executor.
func (Emulator) Run(c *Case) (map[string][]byte, error) {
	mem := emu.NewMemory()
	names := sortedNames(c.Buffers)
	total := 0
	for _, n := range names {
		total += len(c.Buffers[n])
	}
	if total >= collectBeforeBytes {
		// Building a large case leaves garbage as large as its inputs (typed values,
		// files as read); collected now, it does not add to the emulator's copy.
		runtime.GC()
	}
	for _, n := range names {
		mem.Alloc(n, c.Buffers[n]) // a copy: the case keeps its inputs for another run
	}
	addr := func(name string) (uint64, error) {
		a, ok := mem.Addr(name)
		if !ok {
			return 0, fmt.Errorf("no buffer named %s", name)
		}
		return a, nil
	}
	var work *emu.Work
	if c.MaxWork > 0 {
		work = &emu.Work{Limit: c.MaxWork}
		defer func() { c.WorkUsed = work.Used }()
	}
	for _, k := range c.Compiled.Kernels {
		args, err := c.Args(k, addr)
		if err != nil {
			return nil, err
		}
		if err := emu.RunKernelOpts(k, args, mem, emu.RunOptions{MaxWarpInstrs: c.MaxWarpInstrs, Conflicts: c.Conflicts, Work: work}); err != nil {
			return nil, fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	out := map[string][]byte{}
	for _, n := range names {
		out[n] = mem.Bytes(n)
	}
	return out, nil
}
