package emu

import (
	"fmt"
	"sort"

	"github.com/ptxgen/ptxgen/ptx"
)

// Address layout of the emulated device. Global buffers live above 4 GiB so that a
// pointer truncated to 32 bits never lands in one; shared memory has its own window
// of 32-bit offsets and, for generic addressing (cvta), an image at sharedGeneric.
const (
	globalBase    = 1 << 32
	globalAlign   = 256     // every buffer starts 256-byte aligned
	globalGap     = 1 << 16 // unmapped guard bytes between buffers
	sharedGeneric = 1 << 48 // generic address of shared offset 0
)

// Memory is the emulated global memory: named byte buffers at distinct device
// addresses separated by unmapped guard gaps, so that an access just past one buffer
// faults instead of silently reading its neighbour.
type Memory struct {
	bufs   []*buffer // in address order
	byName map[string]*buffer
	next   uint64
}

type buffer struct {
	name string
	addr uint64
	data []byte
	// readBy names the parameter of the running launch that only reads this buffer
	// ("" when none): a store to it is a fault (RunKernelOpts sets it).
	readBy string
}

// NewMemory returns an empty global memory.
func NewMemory() *Memory { return &Memory{byName: map[string]*buffer{}, next: globalBase} }

// Alloc copies data into a new buffer called name and returns its device address.
// Names must be unique.
func (m *Memory) Alloc(name string, data []byte) uint64 {
	if m.byName == nil {
		m.byName = map[string]*buffer{}
		m.next = globalBase
	}
	if _, ok := m.byName[name]; ok {
		panic(fmt.Sprintf("emu: buffer %q allocated twice", name))
	}
	b := &buffer{name: name, addr: m.next, data: append([]byte(nil), data...)}
	m.bufs = append(m.bufs, b)
	m.byName[name] = b
	m.next = (b.addr + uint64(len(data)) + globalGap + globalAlign - 1) &^ (globalAlign - 1)
	return b.addr
}

// Bytes returns the contents of the named buffer (not a copy), nil if there is none.
func (m *Memory) Bytes(name string) []byte {
	if b, ok := m.byName[name]; ok {
		return b.data
	}
	return nil
}

// Addr returns the device address of the named buffer.
func (m *Memory) Addr(name string) (uint64, bool) {
	b, ok := m.byName[name]
	if !ok {
		return 0, false
	}
	return b.addr, true
}

// find returns the buffer holding [addr, addr+n), or nil.
func (m *Memory) find(addr uint64, n int) *buffer {
	i := sort.Search(len(m.bufs), func(i int) bool { return m.bufs[i].addr > addr }) - 1
	if i < 0 {
		return nil
	}
	b := m.bufs[i]
	if addr+uint64(n) > b.addr+uint64(len(b.data)) || addr+uint64(n) < addr {
		return nil
	}
	return b
}

// describe says where addr lies relative to the buffers, for error messages.
func (m *Memory) describe(addr uint64) string {
	i := sort.Search(len(m.bufs), func(i int) bool { return m.bufs[i].addr > addr }) - 1
	var s string
	if i >= 0 {
		b := m.bufs[i]
		end := b.addr + uint64(len(b.data))
		if addr < end {
			s = fmt.Sprintf("offset %d of buffer %q (%d bytes)", addr-b.addr, b.name, len(b.data))
		} else {
			s = fmt.Sprintf("%d bytes past the end of buffer %q (%d bytes)", addr-end, b.name, len(b.data))
		}
	}
	if i+1 < len(m.bufs) {
		b := m.bufs[i+1]
		t := fmt.Sprintf("%d bytes before buffer %q", b.addr-addr, b.name)
		if s == "" {
			return t
		}
		s += ", " + t
	}
	if s == "" {
		return "no buffer is allocated"
	}
	return s
}

// decodeBytesPerInstr bounds what decoding allocates per instruction of a module
// (measured: about 160 bytes kept and 900 allocated in all, for the mla_decode module).
const decodeBytesPerInstr = 1024

// LaunchBytes is about the most host memory RunKernel holds to launch k, beside the
// buffers: the decoded module (every function of it, as RunKernel decodes it) and
// one CTA's state, which is reused CTA after CTA: shared memory, the race checker's
// record of each byte's last write (12 bytes) and of each warp's last read of it (16
// bytes per warp), the cp.async bookkeeping, and every lane's registers. check adds
// it when it admits a run by its memory.
func LaunchBytes(k *ptx.Kernel) (int64, error) {
	p, err := Load(k.Module)
	if err != nil {
		return 0, err
	}
	fp, ok := p.funcs[k.Name]
	if !ok {
		return 0, fmt.Errorf("emu: no kernel %q in the module", k.Name)
	}
	instrs := int64(0)
	for _, f := range p.funcs {
		instrs += int64(len(f.code))
	}
	size := int64(fp.static + k.SharedBytes)
	nw := int64(k.Block+31) / 32
	cta := size * (1 + 12 + 16*nw) // smem, write shadows, read records
	if fp.usesAsync {
		// pending tags and bits; each thread's queue of 32-byte operations, at most
		// one per 4 bytes of shared memory in flight, doubled as a slice grows.
		cta += 8*(size+3)/4 + 8*(size+63)/64 + 64*int64(k.Block) + 2*32*(size+3)/4
	}
	regs := nw * (int64(fp.nslots)*32*8 + int64(fp.npred)*4 + nw*4 + 256)
	bars := int64(16 * nw * 4)
	const slack = 1 << 20 // the launch's small allocations and the allocator's rounding
	return decodeBytesPerInstr*instrs + cta + regs + bars + slack, nil
}
