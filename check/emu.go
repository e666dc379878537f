package check

import (
	"fmt"

	"github.com/ptxgen/ptxgen/emu"
)

// Emulator runs cases on the PTX emulator: the PTX text is parsed back, exactly as
// shipped, and every kernel of the program runs in order on one emulated memory.
type Emulator struct{}

// Run implements Executor.
func (Emulator) Run(c *Case) (map[string][]byte, error) {
	mem := emu.NewMemory()
	names := sortedNames(c.Buffers)
	for _, n := range names {
		mem.Alloc(n, append([]byte(nil), c.Buffers[n]...))
	}
	addr := func(name string) (uint64, error) {
		a, ok := mem.Addr(name)
		if !ok {
			return 0, fmt.Errorf("no buffer named %s", name)
		}
		return a, nil
	}
	for _, k := range c.Compiled.Kernels {
		args, err := c.Args(k, addr)
		if err != nil {
			return nil, err
		}
		if err := emu.RunKernelOpts(k, args, mem, emu.RunOptions{MaxWarpInstrs: c.MaxWarpInstrs, Conflicts: c.Conflicts}); err != nil {
			return nil, fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	out := map[string][]byte{}
	for _, n := range names {
		out[n] = mem.Bytes(n)
	}
	return out, nil
}
