package emu

import (
	"fmt"
	"sort"
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
