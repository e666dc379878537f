package golden

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/ptxgen/ptxgen/internal/strictjson"
)

// KernelVectorsFormat names the vector folder of a kernel of one's own (ptxgen
// check -emu -from FILE -vectors DIR). The folder holds:
//
//	meta.json      {"format": "ptxgen-kernel-vectors", "version": 1,
//	                "args": {"rows": 3, "n": 1000, "alpha": 0.5},
//	                "tolerance": {"abs": 0.001, "rel": 0.01}}
//	NAME.bin       the initial contents of buffer parameter NAME: raw little-endian
//	               elements of the parameter's element type (bf16 and f16 as their 16
//	               bits, e4m3 as bytes), at least the size the kernel declares; needed
//	               for every buffer the kernels read and do not write, optional for a
//	               written one (filled with 0xFF bytes, NaN in every float type,
//	               otherwise)
//	NAME.want.f64  the expected final contents of written buffer NAME, one
//	               little-endian float64 per element of NAME.bin (or of the declared
//	               size); at least one buffer has one
//
// args gives every scalar parameter by name (the rows of the call default to the
// capacity, the split to its largest value); tolerance is optional (each element must
// satisfy |got-want| <= abs + rel*|want|; by default exact for integer buffers and
// about two units in the last place of the element type for floats).
const KernelVectorsFormat = "ptxgen-kernel-vectors"

// KernelVectorsVersion is the meta.json version LoadKernelVectors reads.
const KernelVectorsVersion = 1

// KernelBuffer is what LoadKernelVectors needs to know of one buffer parameter.
type KernelBuffer struct {
	Name     string
	ElemSize int64
	MinBytes int64 // the size the kernels declare for this call
	Written  bool
}

// KernelVectors is a loaded kernel vector folder.
type KernelVectors struct {
	Args      map[string]string // scalar arguments as JSON numbers' text
	Tolerance *Tolerance        // nil: the element type's default
	Buffers   map[string][]byte // NAME.bin, by parameter name
	Want      map[string][]float64
}

type kernelVectorsMeta struct {
	Format    string                 `json:"format"`
	Version   int                    `json:"version"`
	Args      map[string]json.Number `json:"args"`
	Tolerance *struct {
		Abs *float64 `json:"abs"`
		Rel *float64 `json:"rel"`
	} `json:"tolerance"`
}

// LoadKernelVectorsMeta reads a kernel vector folder's meta.json: the args and the
// tolerance (the args size the buffers LoadArrays then reads).
func LoadKernelVectorsMeta(dir string) (*KernelVectors, error) {
	fail := func(format string, args ...any) (*KernelVectors, error) {
		return nil, fmt.Errorf("load vectors %s: %s", dir, fmt.Sprintf(format, args...))
	}
	raw, err := readRegular(filepath.Join(dir, "meta.json"), -1, maxMetaBytes)
	if err != nil {
		return fail("%v", err)
	}
	var m kernelVectorsMeta
	if err := strictjson.Decode(raw, &m); err != nil {
		return fail("meta.json: %v", err)
	}
	if m.Format != KernelVectorsFormat || m.Version != KernelVectorsVersion {
		return fail("meta.json is %q version %d, want %q version %d", m.Format, m.Version, KernelVectorsFormat, KernelVectorsVersion)
	}
	v := &KernelVectors{Args: map[string]string{}, Buffers: map[string][]byte{}, Want: map[string][]float64{}}
	for name, n := range m.Args {
		v.Args[name] = n.String() // a JSON number (strictjson refuses quoted ones)
	}
	if t := m.Tolerance; t != nil {
		if t.Abs == nil || t.Rel == nil || !(*t.Abs >= 0) || !(*t.Rel >= 0) || math.IsInf(*t.Abs, 0) || math.IsInf(*t.Rel, 0) {
			return fail("meta.json: tolerance wants finite abs >= 0 and rel >= 0")
		}
		v.Tolerance = &Tolerance{Abs: *t.Abs, Rel: *t.Rel}
	}
	return v, nil
}

// VectorFile is one array of a kernel vector folder: NAME.bin (the initial
// contents of Buffer) or NAME.want.f64 (its expected final contents), with the
// bytes it holds.
type VectorFile struct {
	Buffer KernelBuffer
	File   string // the file's name in the folder
	Bytes  int64
	Want   bool
}

// Files lists the folder's arrays for buffers and their sizes, reading none of
// them, so that a caller can refuse what the host cannot hold before reading:
// it refuses files that are not regular files of the folder, sizes that do not fit
// the buffer, and a folder without any expected output.
func (v *KernelVectors) Files(dir string, buffers []KernelBuffer) ([]VectorFile, error) {
	fail := func(format string, args ...any) ([]VectorFile, error) {
		return nil, fmt.Errorf("load vectors %s: %s", dir, fmt.Sprintf(format, args...))
	}
	var files []VectorFile
	hasWant := false
	for _, b := range buffers {
		size := b.MinBytes
		// Lstat: a link is not a file of the folder (it may lead anywhere).
		fi, err := os.Lstat(filepath.Join(dir, b.Name+".bin"))
		switch {
		case errors.Is(err, fs.ErrNotExist) && !b.Written:
			return fail("%s.bin is missing: the initial contents of buffer %s, which the kernels read", b.Name, b.Name)
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fail("%v", err)
		case !fi.Mode().IsRegular():
			return fail("%s.bin is not a regular file (a link, a FIFO, a device or a folder)", b.Name)
		case fi.Size()%b.ElemSize != 0 || fi.Size() < b.MinBytes:
			return fail("%s.bin has %d bytes, want a multiple of %d (the element size) of at least %d (the size the kernels declare)", b.Name, fi.Size(), b.ElemSize, b.MinBytes)
		default:
			size = fi.Size()
			files = append(files, VectorFile{Buffer: b, File: b.Name + ".bin", Bytes: size})
		}
		fi, err = os.Lstat(filepath.Join(dir, b.Name+".want.f64"))
		if err != nil {
			continue
		}
		if !fi.Mode().IsRegular() {
			return fail("%s.want.f64 is not a regular file (a link, a FIFO, a device or a folder)", b.Name)
		}
		if !b.Written {
			return fail("%s.want.f64: the kernels do not write %s", b.Name, b.Name)
		}
		n := (size + b.ElemSize - 1) / b.ElemSize
		if n > math.MaxInt64/8 {
			return fail("%s.want.f64: %d elements of 8 bytes do not fit in memory", b.Name, n)
		}
		files = append(files, VectorFile{Buffer: b, File: b.Name + ".want.f64", Bytes: 8 * n, Want: true})
		hasWant = true
	}
	if !hasWant {
		return fail("no NAME.want.f64 file: give the expected contents of at least one written buffer")
	}
	return files, nil
}

// Read reads the files Files listed, each only if it still has the size listed,
// into v.Buffers (NAME.bin, the bytes as read) and v.Want (NAME.want.f64, one
// float64 per element).
func (v *KernelVectors) Read(dir string, files []VectorFile) error {
	for _, f := range files {
		data, err := readRegular(filepath.Join(dir, f.File), f.Bytes, f.Bytes)
		if err != nil {
			return fmt.Errorf("load vectors %s: %v", dir, err)
		}
		if f.Want {
			v.Want[f.Buffer.Name] = float64s(data)
		} else {
			v.Buffers[f.Buffer.Name] = data
		}
	}
	return nil
}
