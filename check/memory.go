package check

import (
	"bufio"
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
	arch "github.com/ptxgen/ptxgen/target"
)

// Host memory: a check holds its inputs, outputs and workspace (and the executor a
// copy of each), plus float64 references. A configuration inside the flags' ranges
// can ask for terabytes (gemm at -m -n -k 16777216, mla_decode at -tokens 65535
// -k0 1048576), so ForConfig estimates the bytes from the configuration and refuses,
// naming the flags, what the host cannot hold, before allocating anything.

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

// HostBytes estimates the host memory a check of configuration v on target needs, in bytes,
// and names the flags of its largest term. Float arithmetic: the products of the
// flags' maxima overflow int64.
func HostBytes(v any, target arch.Target) (float64, string) {
	var parts []memPart
	switch c := v.(type) {
	case kernels.GEMMConfig:
		m, n, k := float64(c.M), float64(c.N), float64(c.K)
		// Each buffer twice (the case and the executor's copy); C's float64 reference.
		parts = []memPart{
			{2 * m * k * 2, "-m x -k (A)"},
			{2 * k * n * 2, "-k x -n (B)"},
			{2*m*n*float64(c.Out.Size()) + 8*m*n, "-m x -n (C and its reference)"},
		}
	case kernels.MLAConfig:
		t, h, d := float64(c.T), float64(c.H), float64(c.D())
		// q, out (bf16, twice) and the float64 reference out.
		parts = append(parts, memPart{2*2*t*h*d*2 + 8*t*h*d, "-tokens x -heads"})
		// The split workspace, as planned for the target (building the IR costs
		// nothing that grows with the shape).
		if p, ch, err := kernels.MLACall(c, target); err == nil {
			ws := 0.0
			for _, w := range p.Workspace {
				ws += 2 * float64(w.BytesFor(c.T*ch.Split))
			}
			parts = append(parts, memPart{ws, "-max-tokens x -heads x -split (workspace)"})
		}
		for i, s := range c.Segments {
			k, b := float64(s.K), float64(s.PageSize)
			pages := 2*math.Ceil(k/b) + 4 // check.MLA's pool
			pageBytes := b * 584
			if c.Cache == mla.CacheBF16 {
				pageBytes = b * d * 2
			}
			parts = append(parts,
				memPart{2 * t * k * 4, fmt.Sprintf("-tokens x -k%d (indices)", i)},
				memPart{2 * pages * (pageBytes + 16), fmt.Sprintf("-k%d x -page%d (cache pool)", i, i)})
		}
	case kernels.CopyConfig:
		// src and dst twice, their float32 and float64 host copies (6x measured RSS).
		parts = []memPart{{6 * float64(c.Bytes()), "-rows"}}
	case kernels.MMALoopConfig:
		parts = []memPart{{2*float64(c.CTAs)*128*128*4 + 8*float64(c.CTAs)*128*128, "-ctas"}}
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

// CheckHostMemory refuses a configuration whose check on target needs more than limit bytes
// (0: HostMemoryLimit) as a *kernels.ConfigError naming the flags of its largest term.
func CheckHostMemory(v any, target arch.Target, limit int64) error {
	source := "the limit given"
	if limit <= 0 {
		limit, source = HostMemoryLimit(), fmt.Sprintf("%.0f%% of this machine's memory", 100*DefaultHostFraction)
	}
	need, flags := HostBytes(v, target)
	if need <= float64(limit) {
		return nil
	}
	flag, _, _ := strings.Cut(strings.TrimPrefix(flags, "-"), " ")
	return &kernels.ConfigError{Flag: flag, Value: flagValue(v, flag),
		Want: fmt.Sprintf("a configuration whose check fits in host memory: it needs about %s (mostly %s), the limit is %s (%s)",
			gib(need), flags, gib(float64(limit)), source)}
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

func gib(b float64) string {
	if b >= 1<<40 {
		return fmt.Sprintf("%.1f TiB", b/(1<<40))
	}
	return fmt.Sprintf("%.1f GiB", b/(1<<30))
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
	source := "the limit given"
	if limit <= 0 {
		limit, source = HostMemoryLimit(), fmt.Sprintf("%.0f%% of this machine's memory", 100*DefaultHostFraction)
	}
	if h.total <= limit {
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
	total := humanBytes(float64(h.total))
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
