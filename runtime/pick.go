package runtime

import (
	"fmt"

	"github.com/ptxgen/ptxgen/target"
)

// rank orders compatible targets: newer first, and at equal number the more specific one
// ('a', then 'f', then plain), since it was generated to use that chip's features.
func rank(t target.ID) int {
	r := t.SM * 4
	switch t.Suffix {
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
// Names are read by target.ParseID.
func PickTarget(arch string, targets []string) (string, error) {
	dev, err := target.ParseID(arch)
	if err != nil {
		return "", fmt.Errorf("runtime: device: %v", err)
	}
	best, bestRank := "", -1
	for _, s := range targets {
		t, err := target.ParseID(s)
		if err != nil {
			return "", fmt.Errorf("runtime: %v", err)
		}
		if t.RunsOn(dev.SM) && rank(t) > bestRank {
			best, bestRank = s, rank(t)
		}
	}
	if best == "" {
		return "", fmt.Errorf("runtime: none of the kernel's targets %v runs on this %s device", targets, arch)
	}
	return best, nil
}
