package emu

import (
	"fmt"
	"math"
	"sync"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/ptx"
)

// f16Table decodes every binary16 pattern (used by cvt and mma).
var f16Table = sync.OnceValue(func() *[65536]float32 {
	var t [65536]float32
	for i := range t {
		t[i] = dtype.F16(i).F32()
	}
	return &t
})

func bf16ToF32(h uint64) float32 { return math.Float32frombits(uint32(h&0xFFFF) << 16) }

// Canonical NaNs written by .relu (PTX: "NaN results are converted to canonical NaN").
const (
	bf16CanonNaN = 0x7FFF
	f16CanonNaN  = 0x7FFF
)

func toBF16(f float32, relu, satfinite bool) uint64 {
	if relu {
		if f != f {
			return bf16CanonNaN
		}
		if f < 0 {
			f = 0
		}
	}
	r := dtype.BF16FromF32(f)
	if satfinite && r&0x7FFF == 0x7F80 {
		r = dtype.BF16MaxFinite | r&0x8000
	}
	return uint64(r)
}

func toF16(f float32, relu, satfinite bool) uint64 {
	if relu {
		if f != f {
			return f16CanonNaN
		}
		if f < 0 {
			f = 0
		}
	}
	r := dtype.F16FromF32(f)
	if satfinite && r&0x7FFF == 0x7C00 {
		r = 0x7BFF | r&0x8000
	}
	return uint64(r)
}

func toE4M3(f float32, relu bool) uint64 {
	if relu {
		if f != f {
			return uint64(dtype.E4M3NaN)
		}
		if f < 0 {
			f = 0
		}
	}
	return uint64(dtype.E4M3FromF32(f))
}

// roundInt rounds x to an integral value with a PTX integer rounding mode.
func roundInt(x float64, mode string) float64 {
	switch mode {
	case "rni":
		return math.RoundToEven(x)
	case "rzi":
		return math.Trunc(x)
	case "rmi":
		return math.Floor(x)
	case "rpi":
		return math.Ceil(x)
	}
	return x
}

// f2i converts to an integer type: round, clamp to the type's range (PTX float to
// integer conversions always saturate), NaN gives 0.
func f2i(x float64, mode string, it itype) uint64 {
	if x != x {
		return 0
	}
	r := roundInt(x, mode)
	if it.signed {
		lo, hi := float64(it.min()), float64(it.max())
		switch {
		case r <= lo:
			return uint64(it.min()) & it.mask
		case r >= hi:
			return it.max()
		}
		return uint64(int64(r)) & it.mask
	}
	switch {
	case r <= 0:
		return 0
	case r >= float64(it.max()):
		return it.max()
	}
	return uint64(r)
}

func (d *decoder) cvt(in *instr, m *mods) (execFn, error) {
	rnd := m.one("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi")
	ftz := m.has("ftz")
	sat := m.has("sat")
	relu := m.has("relu")
	satfinite := m.has("satfinite")
	ts := m.types()
	if len(ts) != 2 {
		return nil, fmt.Errorf("cvt needs a destination and a source type, have %v", ts)
	}
	dt, st := ts[0], ts[1]
	args := in.src.Args
	if (relu || satfinite) && !(dt == "bf16" || dt == "bf16x2" || dt == "f16" || dt == "f16x2" || dt == "e4m3x2") {
		return nil, fmt.Errorf(".relu/.satfinite not supported for .%s", dt)
	}

	// Packed pair conversions: cvt.rn.T2.f32 d, a, b puts a in the upper half.
	if st == "f32" && (dt == "bf16x2" || dt == "f16x2" || dt == "e4m3x2") {
		if err := nargs(in.src); err != nil {
			return nil, err
		}
		if rnd != "rn" || ftz || sat {
			return nil, fmt.Errorf("cvt.%s.f32 needs .rn and takes no .ftz/.sat", dt)
		}
		dd, a, b, err := d.dsrc2(args)
		if err != nil {
			return nil, err
		}
		switch dt {
		case "bf16x2":
			return exec2(dd, a, b, func(x, y uint64) uint64 {
				return toBF16(f32(x), relu, satfinite)<<16 | toBF16(f32(y), relu, satfinite)
			}), nil
		case "f16x2":
			return exec2(dd, a, b, func(x, y uint64) uint64 {
				return toF16(f32(x), relu, satfinite)<<16 | toF16(f32(y), relu, satfinite)
			}), nil
		default:
			if !satfinite {
				return nil, fmt.Errorf("cvt to .e4m3x2 needs .satfinite")
			}
			return exec2(dd, a, b, func(x, y uint64) uint64 {
				return toE4M3(f32(x), relu)<<8 | toE4M3(f32(y), relu)
			}), nil
		}
	}
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	dd, err := d.dst(args[0])
	if err != nil {
		return nil, err
	}
	a, err := d.src(args[1])
	if err != nil {
		return nil, err
	}
	unary := func(f func(x uint64) uint64) (execFn, error) { return exec1(dd, a, f), nil }
	dI, dIsInt := intType(dt)
	sI, sIsInt := intType(st)
	dFloat := dt == "f32" || dt == "f64"
	sFloat := st == "f32" || st == "f64"
	readF := func(x uint64) float64 { return float64(f32(x)) }
	if st == "f64" {
		readF = f64
	} else if ftz {
		readF = func(x uint64) float64 { return float64(f32(ftzBits32(x))) }
	}
	switch {
	case dt == "f16x2" && st == "e4m3x2":
		if rnd != "rn" || ftz || sat || satfinite {
			return nil, fmt.Errorf("cvt.f16x2.e4m3x2 needs .rn only")
		}
		return unary(func(x uint64) uint64 {
			hi, lo := dtype.E4M3(x>>8), dtype.E4M3(x)
			h, l := uint64(hi.F16()), uint64(lo.F16())
			if relu {
				h, l = reluF16(h), reluF16(l)
			}
			return h<<16 | l
		})
	case dt == "e4m3x2" && st == "f16x2":
		if rnd != "rn" || !satfinite || ftz || sat {
			return nil, fmt.Errorf("cvt.e4m3x2.f16x2 needs .rn.satfinite")
		}
		tab := f16Table()
		return unary(func(x uint64) uint64 {
			return toE4M3(tab[x>>16&0xFFFF], relu)<<8 | toE4M3(tab[x&0xFFFF], relu)
		})
	case (dt == "bf16" || dt == "f16") && st == "f32":
		if rnd != "rn" || sat {
			return nil, fmt.Errorf("cvt.%s.f32 needs .rn", dt)
		}
		if dt == "bf16" {
			return unary(func(x uint64) uint64 { return toBF16(float32(readF(x)), relu, satfinite) })
		}
		return unary(func(x uint64) uint64 { return toF16(float32(readF(x)), relu, satfinite) })
	case dt == "f32" && (st == "bf16" || st == "f16"):
		if rnd != "" || sat {
			return nil, fmt.Errorf("cvt.f32.%s is exact and takes no rounding or .sat", st)
		}
		tab := f16Table()
		var rd func(x uint64) float32
		if st == "bf16" {
			rd = bf16ToF32
		} else {
			rd = func(x uint64) float32 { return tab[x&0xFFFF] }
		}
		if ftz {
			return unary(func(x uint64) uint64 { return ftzBits32(b32(rd(x))) })
		}
		return unary(func(x uint64) uint64 { return b32(rd(x)) })
	case dFloat && sFloat:
		wr := func(f float64) uint64 {
			if dt == "f64" {
				return b64(f)
			}
			r := float32(f)
			if sat {
				r = sat32(r)
			}
			if ftz {
				return ftzBits32(b32(r))
			}
			return b32(r)
		}
		switch {
		case rnd == "rni" || rnd == "rzi" || rnd == "rmi" || rnd == "rpi":
			if dt != st {
				return nil, fmt.Errorf("integer rounding needs equal float types")
			}
			return unary(func(x uint64) uint64 { return wr(roundInt(readF(x), rnd)) })
		case dt == "f32" && st == "f64":
			if rnd != "rn" {
				return nil, fmt.Errorf("cvt.f32.f64 needs .rn")
			}
		case rnd != "":
			return nil, fmt.Errorf("cvt.%s.%s takes no rounding .%s", dt, st, rnd)
		}
		if sat && dt == "f64" {
			return nil, fmt.Errorf(".sat on .f64 is not supported")
		}
		return unary(func(x uint64) uint64 { return wr(readF(x)) })
	case dFloat && sIsInt:
		if rnd != "rn" || ftz || sat {
			return nil, fmt.Errorf("cvt.%s.%s needs .rn", dt, st)
		}
		return unary(func(x uint64) uint64 {
			v := sI.ext(x)
			if dt == "f64" {
				if sI.signed {
					return b64(float64(int64(v)))
				}
				return b64(float64(v))
			}
			// Go converts 64-bit integers to float32 with one correct rounding.
			if sI.signed {
				return b32(float32(int64(v)))
			}
			return b32(float32(v))
		})
	case dIsInt && sFloat:
		if rnd != "rni" && rnd != "rzi" && rnd != "rmi" && rnd != "rpi" {
			return nil, fmt.Errorf("cvt.%s.%s needs .rni, .rzi, .rmi or .rpi", dt, st)
		}
		return unary(func(x uint64) uint64 { return f2i(readF(x), rnd, dI) })
	case dIsInt && sIsInt:
		if rnd != "" || ftz {
			return nil, fmt.Errorf("integer cvt takes no rounding or .ftz")
		}
		if sat {
			return unary(func(x uint64) uint64 {
				v := sI.ext(x)
				if sI.signed && int64(v) < 0 {
					if !dI.signed {
						return 0
					}
					if int64(v) < dI.min() {
						return uint64(dI.min()) & dI.mask
					}
					return v & dI.mask
				}
				if v > dI.max() {
					return dI.max()
				}
				return v
			})
		}
		return unary(func(x uint64) uint64 { return sI.ext(x) & dI.mask })
	}
	return nil, fmt.Errorf("cvt.%s.%s is not supported", dt, st)
}

func reluF16(h uint64) uint64 {
	if h&0x7FFF > 0x7C00 {
		return f16CanonNaN
	}
	if h&0x8000 != 0 {
		return 0
	}
	return h
}

// dsrc2 resolves "d, a, b".
func (d *decoder) dsrc2(args []ptx.Operand) (dd, a, b int, err error) {
	if dd, err = d.dst(args[0]); err != nil {
		return
	}
	if a, err = d.src(args[1]); err != nil {
		return
	}
	b, err = d.src(args[2])
	return
}

// cvta converts between generic and state-space addresses. Global addresses are the
// same in both; shared offsets map to a window at sharedGeneric.
func (d *decoder) cvta(in *instr, m *mods) (execFn, error) {
	to := m.has("to")
	space := m.one("global", "shared")
	if space == "" {
		return nil, fmt.Errorf("cvta needs .global or .shared")
	}
	t, err := m.typ()
	if err != nil {
		return nil, err
	}
	if t != "u64" && t != "u32" {
		return nil, fmt.Errorf("cvta type must be .u64 or .u32")
	}
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	dd, err := d.dst(in.src.Args[0])
	if err != nil {
		return nil, err
	}
	a, err := d.src(in.src.Args[1])
	if err != nil {
		return nil, err
	}
	tm := widthMask(typeBits(t))
	switch {
	case space == "global":
		return exec1(dd, a, func(x uint64) uint64 { return x & tm }), nil
	case to:
		return exec1(dd, a, func(x uint64) uint64 { return (x - sharedGeneric) & tm }), nil
	default:
		if t != "u64" {
			return nil, fmt.Errorf("cvta.shared to a generic address needs .u64")
		}
		return exec1(dd, a, func(x uint64) uint64 { return x&0xFFFFFFFF + sharedGeneric }), nil
	}
}
