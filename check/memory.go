package check

import (
	"bufio"
	"cmp"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
	arch "github.com/ptxgen/ptxgen/target"
)

// Host memory: a check holds its inputs and outputs twice (the case's copy and the
// emulator's memory), some inputs a third time as typed host values, the float64
// references, the outputs decoded to compare, and the emulator's own state
// (emu.LaunchBytes). A configuration inside the flags' ranges can ask for terabytes
// (gemm at -m -n -k 16777216, mla_decode at -tokens 65535 -k0 1048576), so the check
// estimates the bytes from the configuration and refuses, naming the flags, what the
// host cannot hold, before allocating anything; TestHostBytesCoversMeasured holds the
// estimate against the heap a check holds. ptxgen check sets the Go runtime's memory
// limit to the same limit, so that garbage between the phases does not add up.

// DefaultHostFraction is the share of the machine's physical memory (MemTotal in
// /proc/meminfo) a check may use.
const DefaultHostFraction = 0.5

// fallbackHostBytes is the limit where /proc/meminfo cannot be read.
const fallbackHostBytes = 8 << 30

// HostMemoryLimit is the host memory a check may use by default: half of MemTotal,
// or 8 GiB where /proc/meminfo is unreadable.
func HostMemoryLimit() int64 {
	if total := memTotal("/proc/meminfo"); total > 0 {
		return int64(float64(total) * DefaultHostFraction)
	}
	return fallbackHostBytes
}

// memTotal reads MemTotal (bytes) from a meminfo file, 0 when it cannot.
func memTotal(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 2 && fields[1] == "kB" {
			if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil && kb > 0 && kb < math.MaxInt64/1024 {
				return kb * 1024
			}
		}
		return 0
	}
	return 0
}

// memPart is one term of an estimate: its bytes and the flags that set it.
type memPart struct {
	bytes float64
	flags string
}

// HostBytes estimates the host memory a check of configuration v on target holds at
// its peak, in bytes, beside the emulator's own state (which EmulatorStateBytes gives
// once the program is lowered), and names the flags of its largest term. Float
// arithmetic: the products of the flags' maxima overflow int64.
func HostBytes(v any, target arch.Target) (float64, string) {
	var parts []memPart
	switch c := v.(type) {
	case kernels.GEMMConfig:
		g := golden.GemmConfig{M: c.M, N: c.N, K: c.K}
		mn := float64(c.M) * float64(c.N)
		os := float64(c.Out.Size())
		// A and B as generated and as bytes, then in the case and the emulator; C in
		// the case, the emulator and decoded to compare, and its float64 reference.
		parts = []memPart{
			{2 * 2 * float64(g.ALen()), "-m x -k (A)"},
			{2 * 2 * float64(g.BLen()), "-k x -n (B)"},
			{mn * (3*os + 8), "-m x -n (C and its reference)"},
		}
	case kernels.MLAConfig:
		t, h, d := float64(c.T), float64(c.H), float64(c.D())
		// q as generated, in the case and the emulator; out in the case, the
		// emulator, decoded, and its float64 reference (2+2+2+8 bytes); lse likewise.
		parts = append(parts, memPart{3*t*h*d*2 + 14*t*h*d + 20*t*h, "-tokens x -heads"})
		// The split workspace, as planned for the target (building the IR costs
		// nothing that grows with the shape).
		if p, ch, err := kernels.MLACall(c, target); err == nil {
			ws := 0.0
			for _, w := range p.Workspace {
				ws += 2 * (float64(w.Bytes) + float64(w.PerPart)*float64(c.T)*float64(ch.Split))
			}
			parts = append(parts, memPart{ws, "-max-tokens x -heads x -split (workspace)"})
		}
		ksum := 0.0
		for i, s := range c.Segments {
			k, b := float64(s.K), float64(s.PageSize)
			ksum += k
			pages := 2*math.Ceil(k/b) + 4 // check.MLA's pool
			pageBytes := b * 584
			if c.Cache == mla.CacheBF16 {
				pageBytes = b * d * 2
			}
			parts = append(parts,
				// indices (and lengths) as generated, in the case and the emulator
				memPart{3 * t * (k + 1) * 4, fmt.Sprintf("-tokens x -k%d (indices)", i)},
				// the pool, shared by the inputs and the case, and the emulator's copy
				memPart{2 * pages * (pageBytes + 16), fmt.Sprintf("-k%d x -page%d (cache pool)", i, i)})
		}
		// The reference's K/V vectors of a row, 8 bytes an element, per worker.
		workers := float64(min(runtime.NumCPU(), max(c.T, 1)))
		parts = append(parts, memPart{workers * 8 * ksum * d, "-k0/-k1 (the reference's vectors of a row)"})
	case vectorsMemory:
		// As for generated inputs, but the folder's own pools and reference.
		t, h, d := float64(c.cfg.T), float64(c.cfg.H), float64(c.cfg.D())
		parts = append(parts, memPart{3*t*h*d*2 + 14*t*h*d + 20*t*h, "T x H (q, out and lse)"})
		if p, ch, err := kernels.MLACall(c.cfg, target); err == nil {
			ws := 0.0
			for _, w := range p.Workspace {
				ws += 2 * (float64(w.Bytes) + float64(w.PerPart)*t*float64(ch.Split))
			}
			parts = append(parts, memPart{ws, "T x H x the split (workspace)"})
		}
		for i := range c.layout.Segments {
			s := c.layout.Segment(i)
			parts = append(parts,
				memPart{3 * t * (float64(s.K) + 1) * 4, fmt.Sprintf("T x segments[%d].K (indices)", i)},
				memPart{2 * float64(s.Pages) * float64(s.PageStride), fmt.Sprintf("segments[%d] pages x page_stride (cache pool)", i)})
		}
	case kernels.CopyConfig:
		// src and dst in the case and the emulator, the float64 reference, dst
		// decoded to compare: 3.5 x the bytes of src and dst.
		parts = []memPart{{3.5 * float64(c.Bytes()), "-rows"}}
	case kernels.MMALoopConfig:
		// C in the case, the emulator and decoded, and its float64 reference.
		parts = []memPart{{float64(c.CTAs) * 128 * 128 * (3*4 + 8), "-ctas"}}
	}
	total, largest := 0.0, memPart{}
	for _, p := range parts {
		total += p.bytes
		if p.bytes > largest.bytes {
			largest = p
		}
	}
	return total, largest.flags
}

// vectorsMemory is a check of a test-vector folder, for HostBytes: the configuration
// (meta.json's shape, the plan's flags) and the folder's layout (its pools).
type vectorsMemory struct {
	cfg    kernels.MLAConfig
	layout golden.MLAConfig
}

// runtimeBytes is the resident memory the process holds beside a heap of heap bytes:
// the Go runtime's metadata and stacks (a few percent) and the binary. A check of
// gemm -m 1 -n 8388480 -k 200 held 0.5% more resident memory than its heap.
func runtimeBytes(heap float64) float64 { return heap/32 + 16<<20 }

// EmulatorStateBytes is the emulator's own state while it runs c, beside the
// buffers: the most of its kernels' emu.LaunchBytes (they launch one after another),
// and the kernel that needs it.
func EmulatorStateBytes(c *lower.Compiled) (int64, string, error) {
	most, name := int64(0), ""
	for _, k := range c.Kernels {
		b, err := emu.LaunchBytes(k)
		if err != nil {
			return 0, "", err
		}
		if b > most {
			most, name = b, k.Name
		}
	}
	return most, name, nil
}

// hostLimit is limit, or HostMemoryLimit where it is 0, and how it was set.
func hostLimit(limit int64) (int64, string) {
	if limit <= 0 {
		return HostMemoryLimit(), fmt.Sprintf("%.0f%% of this machine's memory", 100*DefaultHostFraction)
	}
	return limit, "the limit given"
}

// CheckHostMemory refuses a configuration whose check on target needs more than limit bytes
// (0: HostMemoryLimit) as a *kernels.ConfigError naming the flags of its largest term.
// It runs before anything is lowered; admitHost runs the same check with the
// emulator's state once the program is.
func CheckHostMemory(v any, target arch.Target, limit int64) error {
	return hostMemoryError(v, target, limit, 0, "")
}

// hostAdmission is the check a case builder runs once the program is lowered,
// before it allocates the buffers: CheckHostMemory with the emulator's state added.
// admitted is the estimate it passed.
type hostAdmission struct {
	v        any
	target   arch.Target
	limit    int64
	admitted int64
}

func (a *hostAdmission) admit(c *lower.Compiled) error {
	state, kernel, err := EmulatorStateBytes(c)
	if err != nil {
		return err
	}
	if err := hostMemoryError(a.v, a.target, a.limit, state, kernel); err != nil {
		return err
	}
	need, _ := HostBytes(a.v, a.target)
	a.admitted = int64(min(need+float64(state), math.MaxInt64))
	return nil
}

func hostMemoryError(v any, target arch.Target, limit, state int64, kernel string) error {
	limit, source := hostLimit(limit)
	need, flags := HostBytes(v, target)
	need += float64(state)
	need += runtimeBytes(need)
	if need <= float64(limit) {
		return nil
	}
	mostly := flags
	if state > 0 {
		mostly += fmt.Sprintf("; the emulator's own state for kernel %s: %s", kernel, humanBytes(float64(state)))
	}
	if _, ok := v.(vectorsMemory); ok { // no flag set these sizes: meta.json did
		return fmt.Errorf("its check needs about %s of host memory (mostly %s), more than the limit of %s (%s)",
			humanBytes(need), mostly, humanBytes(float64(limit)), source)
	}
	flag, _, _ := strings.Cut(strings.TrimPrefix(flags, "-"), " ")
	return &kernels.ConfigError{Flag: flag, Value: flagValue(v, flag),
		Want: fmt.Sprintf("a configuration whose check fits in host memory: it needs about %s (mostly %s), the limit is %s (%s)",
			humanBytes(need), mostly, humanBytes(float64(limit)), source)}
}

// flagValue is the value of a configuration flag, for the error message.
func flagValue(v any, flag string) string {
	switch c := v.(type) {
	case kernels.GEMMConfig:
		return fmt.Sprint(map[string]int{"m": c.M, "n": c.N, "k": c.K}[flag])
	case kernels.MLAConfig:
		switch flag {
		case "tokens":
			return fmt.Sprint(c.T)
		case "max-tokens":
			return fmt.Sprint(c.Capacity())
		case "k0", "k1":
			if i := int(flag[1] - '0'); i < len(c.Segments) {
				return fmt.Sprint(c.Segments[i].K)
			}
		}
	case kernels.CopyConfig:
		return fmt.Sprint(c.Rows)
	case kernels.MMALoopConfig:
		return fmt.Sprint(map[string]int{"ctas": c.CTAs, "iters": c.Iters}[flag])
	}
	return "?"
}

// MaxEmulatorSeconds bounds the estimated emulation time of ptxgen check -emu: a check
// that would run for more than half an hour is refused rather than left to look hung.
const MaxEmulatorSeconds = 1800

// EmulatorSeconds estimates how long the emulator runs configuration v, from its work
// (multiply-adds of padded tiles, or copied elements) at half the rate measured on a
// loaded 2-core machine (gemm 2e8 MAC/s, mla_decode 1.7e8, mma_loop 6e8, copy 6e6
// elements/s), and names the flags that set the work.
func EmulatorSeconds(v any) (float64, string) {
	up := func(x, g int) float64 { return float64((x + g - 1) / g * g) }
	switch c := v.(type) {
	case kernels.GEMMConfig:
		return up(c.M, 16) * up(c.N, 8) * up(c.K, 16) / 1e8, "-m x -n x -k"
	case kernels.MLAConfig:
		k := 0.0
		for _, s := range c.Segments {
			k += up(s.K, 32)
		}
		// q·k, then P hi and lo times V: three dots per candidate and head.
		return 3 * float64(c.T) * up(c.H, 16) * k * up(c.D(), 64) / 8e7, "-tokens x -heads x -k0/-k1"
	case kernels.CopyConfig:
		return float64(c.Rows) * 256 / 3e6, "-rows"
	case kernels.MMALoopConfig:
		return float64(c.CTAs) * float64(c.Iters) * 128 * 128 * 16 / 3e8, "-ctas x -iters"
	}
	return 0, ""
}

// CheckEmulatorTime refuses a configuration whose emulation is estimated to take more
// than maxSeconds (ptxgen check: MaxEmulatorSeconds), as a *kernels.ConfigError naming
// the flags.
func CheckEmulatorTime(v any, maxSeconds float64) error {
	secs, flags := EmulatorSeconds(v)
	if secs <= maxSeconds {
		return nil
	}
	flag, _, _ := strings.Cut(strings.TrimPrefix(flags, "-"), " ")
	limit := fmt.Sprintf("the %g-second limit", maxSeconds)
	if maxSeconds >= 60 {
		limit = fmt.Sprintf("the %g-minute limit", maxSeconds/60)
	}
	return &kernels.ConfigError{Flag: flag, Value: flagValue(v, flag),
		Want: fmt.Sprintf("a configuration the emulator finishes: this one needs %s of emulation (%s), over %s; use ptxgen-gpu check -gpu for it, or smaller flags",
			duration(secs), flags, limit)}
}

func duration(s float64) string {
	switch {
	case s >= 48*3600:
		return fmt.Sprintf("about %.0f days", s/86400)
	case s >= 3600:
		return fmt.Sprintf("about %.1f hours", s/3600)
	}
	return fmt.Sprintf("about %.0f minutes", s/60)
}

// hostMemory adds up the host memory a check holds, term by term, in bytes. Sums
// saturate at math.MaxInt64: sizes from -args or the IR reach 2^63, where a plain
// sum wraps to a small number (and makeslice panics).
type hostMemory struct {
	terms []memTerm
	total int64
}

// memTerm is copies of a block of bytes, named for messages.
type memTerm struct {
	name          string
	bytes, copies int64
	source        string // where the size comes from ("" when the IR declares it)
}

func (h *hostMemory) add(name string, bytes, copies int64, source string) {
	h.terms = append(h.terms, memTerm{name, bytes, copies, source})
	h.total = satAdd(h.total, satMul(bytes, copies))
}

// check refuses a total over limit (0: HostMemoryLimit), naming the largest terms
// with their sizes.
func (h *hostMemory) check(limit int64) error {
	limit, source := hostLimit(limit)
	need := float64(h.total) + runtimeBytes(float64(h.total))
	if need <= float64(limit) {
		return nil
	}
	terms := slices.Clone(h.terms)
	slices.SortStableFunc(terms, func(a, b memTerm) int { return cmp.Compare(satMul(b.bytes, b.copies), satMul(a.bytes, a.copies)) })
	var names []string
	for _, t := range terms[:min(3, len(terms))] {
		s := fmt.Sprintf("%s (%d bytes x %d", t.name, t.bytes, t.copies)
		if t.source != "" {
			s += ", " + t.source
		}
		names = append(names, s+")")
	}
	total := humanBytes(need)
	if h.total == math.MaxInt64 {
		total = "more than 8 EiB"
	}
	return fmt.Errorf("the check needs %s of host memory, more than the limit of %s (%s); the largest: %s",
		total, humanBytes(float64(limit)), source, strings.Join(names, ", "))
}

// humanBytes writes a byte count in the largest binary unit it reaches.
func humanBytes(b float64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for ; b >= 1024 && i < len(units)-1; i++ {
		b /= 1024
	}
	if i == 0 {
		return fmt.Sprintf("%.0f bytes", b)
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
