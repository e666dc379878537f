package runtime

import (
	"fmt"
	"strconv"
	"strings"
)

// target is a parsed "sm_XY[a|f]" name.
type target struct {
	cc     int  // major*10 + minor, e.g. 90, 120
	suffix byte // 0, 'a' (this exact chip only) or 'f' (this family: same major, minor >= )
}

func parseTarget(s string) (target, error) {
	rest, ok := strings.CutPrefix(s, "sm_")
	if !ok {
		rest, ok = strings.CutPrefix(s, "compute_") // PTX accepts it as a synonym
	}
	if !ok || rest == "" {
		return target{}, fmt.Errorf("runtime: bad target %q (want e.g. sm_90)", s)
	}
	var t target
	if c := rest[len(rest)-1]; c == 'a' || c == 'f' {
		t.suffix = c
		rest = rest[:len(rest)-1]
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 10 || rest[0] == '0' {
		return target{}, fmt.Errorf("runtime: bad target %q (want e.g. sm_90)", s)
	}
	t.cc = n
	return t, nil
}

// runsOn reports whether code for target t runs on a device of compute capability dev:
// plain targets run on every later chip (the driver JIT-compiles the PTX), 'a' targets only
// on the chip they name, and 'f' targets on later chips of the same major version.
func (t target) runsOn(dev int) bool {
	switch t.suffix {
	case 'a':
		return t.cc == dev
	case 'f':
		return t.cc/10 == dev/10 && t.cc <= dev
	}
	return t.cc <= dev
}

// rank orders compatible targets: newer first, and at equal number the more specific one
// ('a', then 'f', then plain), since it was generated to use that chip's features.
func (t target) rank() int {
	r := t.cc * 4
	switch t.suffix {
	case 'a':
		r += 2
	case 'f':
		r++
	}
	return r
}

// PickTarget returns, among the targets a kernel was generated for, the best one that runs
// on a device of architecture arch ("sm_90"): the newest that the device supports, never
// one newer than the device. sm_80 PTX runs on every device from 8.0 on, through the JIT.
func PickTarget(arch string, targets []string) (string, error) {
	dev, err := parseTarget(arch)
	if err != nil {
		return "", err
	}
	best, bestRank := "", -1
	for _, s := range targets {
		t, err := parseTarget(s)
		if err != nil {
			return "", err
		}
		if t.runsOn(dev.cc) && t.rank() > bestRank {
			best, bestRank = s, t.rank()
		}
	}
	if best == "" {
		return "", fmt.Errorf("runtime: none of the kernel's targets %v runs on this %s device", targets, arch)
	}
	return best, nil
}
