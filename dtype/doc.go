// Package dtype holds the small number formats the kernels read and write
// (bfloat16, float16 and float8 e4m3fn) as plain bit types, with exact decodes
// and round-to-nearest-even encodes that match the PTX cvt instructions.
//
// Everything here is exact: decodes return the value the bits denote, and the
// encodes round once, from the exact input, so the emulator, the float64
// references and the tests can all agree bit for bit with the hardware.
package dtype
