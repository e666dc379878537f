//go:build !cuda || !cgo

package runtime

import "github.com/ptxgen/ptxgen/ptx"

// deviceState is empty without CUDA: no Device is ever opened.
type deviceState struct{}

// kernelHandle is empty without CUDA: no Kernel is ever loaded.
type kernelHandle struct{}

// streamHandle is empty without CUDA: no Stream is ever created.
type streamHandle struct{}

// Open returns ErrNoCUDA: this build has no GPU support (see the package doc).
func Open(ordinal int) (*Device, error) { return nil, ErrNoCUDA }

// Close returns ErrNoCUDA.
func (d *Device) Close() error { return ErrNoCUDA }

// Sync returns ErrNoCUDA.
func (d *Device) Sync() error { return ErrNoCUDA }

// LoadPTX returns ErrNoCUDA.
func (d *Device) LoadPTX(text string, facts *ptx.Kernel) (*Kernel, error) { return nil, ErrNoCUDA }

// Alloc returns ErrNoCUDA.
func (d *Device) Alloc(bytes int64) (*Buffer, error) { return nil, ErrNoCUDA }

// Time returns ErrNoCUDA.
func (d *Device) Time(launch func() error) (float32, error) { return 0, ErrNoCUDA }

// Launch returns ErrNoCUDA.
func (k *Kernel) Launch(args ...Arg) error { return ErrNoCUDA }

// LaunchOn returns ErrNoCUDA.
func (k *Kernel) LaunchOn(s *Stream, args ...Arg) error { return ErrNoCUDA }

// NewStream returns ErrNoCUDA.
func (d *Device) NewStream() (*Stream, error) { return nil, ErrNoCUDA }

// Sync returns ErrNoCUDA.
func (s *Stream) Sync() error { return ErrNoCUDA }

// Close returns ErrNoCUDA.
func (s *Stream) Close() error { return ErrNoCUDA }

// Unload returns ErrNoCUDA.
func (k *Kernel) Unload() error { return ErrNoCUDA }

// CopyIn returns ErrNoCUDA.
func (b *Buffer) CopyIn(src []byte) error { return ErrNoCUDA }

// CopyOut returns ErrNoCUDA.
func (b *Buffer) CopyOut(dst []byte) error { return ErrNoCUDA }

// Zero returns ErrNoCUDA.
func (b *Buffer) Zero() error { return ErrNoCUDA }

// ZeroAsync returns ErrNoCUDA.
func (b *Buffer) ZeroAsync() error { return ErrNoCUDA }

// Free returns ErrNoCUDA.
func (b *Buffer) Free() error { return ErrNoCUDA }
