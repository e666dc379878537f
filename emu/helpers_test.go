package emu

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ptx"
)

// kernel wraps a hand-written body in a module with a generous register file.
func kernel(params, body string) string {
	return `.version 7.8
.target sm_90
.address_size 64

.visible .entry k(` + params + `)
{
	.reg .pred %p<8>;
	.reg .b16 %h<8>;
	.reg .b32 %r<64>;
	.reg .b64 %rd<32>;
	.reg .f32 %f<64>;
	.extern .shared .align 16 .b8 smem[];
` + body + `
}
`
}

func parse(t testing.TB, src string) *ptx.Module {
	t.Helper()
	m, err := ptx.Parse(src)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return m
}

func run(t testing.TB, src string, l Launch, mem *Memory) error {
	t.Helper()
	m := parse(t, src)
	if mem == nil {
		mem = NewMemory()
	}
	return Run(m, "k", l, mem)
}

// wantErr checks that err is non-nil and contains every fragment.
func wantErr(t *testing.T, err error, frags ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", frags)
	}
	for _, f := range frags {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err, f)
		}
	}
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesF32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func u16Bytes(v []uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return b
}

func u32Bytes(v []uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

func bytesU32(b []byte) []uint32 {
	v := make([]uint32, len(b)/4)
	for i := range v {
		v[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return v
}
