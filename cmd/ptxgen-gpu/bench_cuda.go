//go:build cuda && cgo

package main

import (
	"fmt"

	"github.com/ptxgen/ptxgen/check"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/runtime"
)

func (g gpuDevice) SMs() int { return g.d.SMs() }

// L2Bytes is an upper bound of the L2 of current parts (H100 50 MB, H200 60 MB,
// RTX PRO 6000 128 MB is larger: rotation then only partly defeats it, and the
// flush does the rest).
func (g gpuDevice) L2Bytes() int64 { return 64 << 20 }

func (g gpuDevice) Driver() string {
	v := g.d.DriverVersion()
	return fmt.Sprintf("CUDA %d.%d", v/1000, v%1000/10)
}

// gpuPrepared is a case resident on the GPU: its kernels loaded once, and sets
// copies of its buffers with the launch arguments of each set.
type gpuPrepared struct {
	d       *runtime.Device
	c       *check.Case
	kernels []*runtime.Kernel
	bufs    []map[string]*runtime.Buffer
	args    [][][]runtime.Arg // [set][kernel]
	scratch *runtime.Buffer
	// readBack reads the scratch's first 2x L2 back after its write (a clean
	// flush, l2Flush.Clean), into readOut.
	readBack *runtime.Kernel
	readOut  *runtime.Buffer
	readArgs []runtime.Arg
}

func (g gpuDevice) Prepare(c *check.Case, sets int) (preparedCase, error) {
	p := &gpuPrepared{d: g.d, c: c}
	ok := false
	defer func() {
		if !ok {
			p.Close()
		}
	}()
	for _, k := range c.Compiled.Kernels {
		rk, err := g.d.LoadKernel(k)
		if err != nil {
			return nil, fmt.Errorf("loading %s: %w", k.Name, err)
		}
		p.kernels = append(p.kernels, rk)
	}
	for s := 0; s < sets; s++ {
		bufs := map[string]*runtime.Buffer{}
		p.bufs = append(p.bufs, bufs)
		for name, data := range c.Buffers {
			b, err := g.d.Alloc(max(int64(len(data)), 1))
			if err != nil {
				return nil, fmt.Errorf("buffer %s: %w", name, err)
			}
			bufs[name] = b
			if len(data) > 0 {
				if err := b.CopyIn(data); err != nil {
					return nil, err
				}
			}
		}
		var set [][]runtime.Arg
		for _, k := range c.Compiled.Kernels {
			var names []string
			args, err := c.Args(k, func(name string) (uint64, error) {
				if _, ok := bufs[name]; !ok {
					return 0, fmt.Errorf("no buffer named %s", name)
				}
				names = append(names, name)
				return uint64(len(names)), nil
			})
			if err != nil {
				return nil, err
			}
			ra := make([]runtime.Arg, len(args))
			for i, prm := range k.Params {
				if prm.Kind == "ptr" {
					ra[i] = runtime.Ptr(bufs[names[args[i].(uint64)-1]])
					continue
				}
				v, err := check.ScalarArg(prm.Kind, args[i])
				if err != nil {
					return nil, fmt.Errorf("%s: parameter %s: %v", k.Name, prm.Name, err)
				}
				if ra[i], err = scalarArg(v); err != nil {
					return nil, err
				}
			}
			set = append(set, ra)
		}
		p.args = append(p.args, set)
	}
	ok = true
	return p, nil
}

func scalarArg(v any) (runtime.Arg, error) {
	switch a := v.(type) {
	case int32:
		return runtime.I32(a), nil
	case uint32:
		return runtime.U32(a), nil
	case int64:
		return runtime.I64(a), nil
	case uint64:
		return runtime.U64(a), nil
	case float32:
		return runtime.F32(a), nil
	case float64:
		return runtime.F64(a), nil
	}
	return runtime.Arg{}, fmt.Errorf("unexpected scalar %T", v)
}

func (p *gpuPrepared) Time(i int, flush l2Flush) (float64, error) {
	if flush.Bytes > 0 {
		if p.scratch == nil || p.scratch.Size() < flush.Bytes {
			if p.scratch != nil {
				p.scratch.Free()
			}
			b, err := p.d.Alloc(flush.Bytes)
			if err != nil {
				return 0, fmt.Errorf("L2 flush buffer: %w", err)
			}
			p.scratch = b
			p.readArgs = nil
		}
		// Queued, not waited for: the GPU spends the memset's time while the host
		// queues the events and launches, so no host latency lands in the timing.
		if err := p.scratch.ZeroAsync(); err != nil {
			return 0, err
		}
		if flush.Clean {
			if err := p.readBackScratch(); err != nil {
				return 0, fmt.Errorf("L2 flush read-back: %w", err)
			}
		}
	}
	ms, err := p.d.Time(func() error {
		for k, rk := range p.kernels {
			if err := rk.Launch(p.args[i][k]...); err != nil {
				return err
			}
		}
		return nil
	})
	return float64(ms), err
}

// readBackScratch queues read_back over the scratch's first 2 x 64 MiB (the
// memset's last lines are what L2 holds; reading the first ones evicts them,
// written back now, and leaves clean lines in their place).
func (p *gpuPrepared) readBackScratch() error {
	if p.readArgs == nil {
		words := int(min(p.scratch.Size(), 2*gpuDevice{p.d}.L2Bytes()) / 4 / 4096 * 4096)
		cfg := kernels.ReadBackConfig{Words: words, CTAs: 4 * p.d.SMs()}
		rc, err := check.ReadBack(cfg, p.c.Compiled.Target, 1)
		if err != nil {
			return err
		}
		if p.readBack == nil {
			if p.readBack, err = p.d.LoadKernel(rc.Compiled.Kernels[0]); err != nil {
				return err
			}
			if p.readOut, err = p.d.Alloc(int64(cfg.CTAs) * 128 * 4); err != nil {
				return err
			}
		}
		p.readArgs = []runtime.Arg{runtime.Ptr(p.scratch), runtime.Ptr(p.readOut)}
	}
	return p.readBack.Launch(p.readArgs...)
}

func (p *gpuPrepared) Final(i int) (map[string][]byte, error) {
	if err := p.d.Sync(); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for name, b := range p.bufs[i] {
		data := make([]byte, len(p.c.Buffers[name]))
		if len(data) > 0 {
			if err := b.CopyOut(data); err != nil {
				return nil, err
			}
		}
		out[name] = data
	}
	return out, nil
}

func (p *gpuPrepared) Close() error {
	for _, set := range p.bufs {
		for _, b := range set {
			b.Free()
		}
	}
	for _, k := range p.kernels {
		k.Unload()
	}
	if p.scratch != nil {
		p.scratch.Free()
	}
	if p.readBack != nil {
		p.readBack.Unload()
		p.readOut.Free()
	}
	return nil
}
