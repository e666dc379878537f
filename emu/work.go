package emu

import (
	"fmt"
	"strings"
)

// Work counts the emulation work of the launches that share it and bounds it. A unit
// is about the time of one ALU warp instruction; InstrCost weighs the rest by what
// they cost the emulator (measured: an mma.sync m16n8k16 about 20, an ldmatrix.x4 36,
// a shared-memory access 8 per 4 bytes a lane moves, plus 8 for the race checker), so
// that a budget of units is a budget of time. A launch that would pass Limit stops
// with a *WorkError: after its first CTA, when that CTA's work times the launch's
// CTAs would pass it, else at the instruction that does.
type Work struct {
	Limit int64
	Used  int64 // the work of the launches so far, updated as they run
}

// WorkError is a launch stopped by its Work's limit: projected from its first CTA
// (At nil), or where the work ran out (At the instruction).
type WorkError struct {
	Kernel      string
	Limit, Used int64 // Used: before this launch
	// FirstCTA is the work of the launch's first CTA and CTAs its count, for a
	// projection.
	FirstCTA int64
	CTAs     int
	At       *Error
}

func (e *WorkError) Error() string {
	if e.At != nil {
		return e.At.Error()
	}
	before := ""
	if e.Used > 0 {
		before = fmt.Sprintf(" (%d spent before them)", e.Used)
	}
	return fmt.Sprintf("emu: %s: its first CTA did %d units of work, so its %d CTAs would do about %d, past the emulation budget of %d units%s",
		e.Kernel, e.FirstCTA, e.CTAs, e.FirstCTA*int64(e.CTAs), e.Limit, before)
}

// Weights of InstrCost, in ALU warp instructions.
const (
	costMMA        = 20 // mma.sync m16n8k16 (2048 multiply-adds); m16n8k8 half
	costMatrix     = 9  // each 8x8 matrix of an ldmatrix, stmatrix or movmatrix
	costSharedBase = 8  // a shared-memory access: the race checker's shadows
	costSharedWord = 8  // and per 4 bytes a lane moves
	costGlobal     = 4
	costAsync      = 24 // cp.async: a global read and a shared write in flight
	costApprox     = 8  // ex2, lg2, rcp, rsqrt, sqrt, sin, cos .approx
)

// InstrCost is the work of one warp instruction of opcode op (with its modifiers,
// as "ld.shared.v4.u32"), in units of Work.
func InstrCost(op string) int64 {
	base, _, _ := strings.Cut(op, ".")
	mods := strings.Split(op, ".")[1:]
	has := func(m string) bool {
		for _, x := range mods {
			if x == m {
				return true
			}
		}
		return false
	}
	switch base {
	case "mma":
		if has("m16n8k8") {
			return costMMA / 2
		}
		return costMMA
	case "ldmatrix", "stmatrix", "movmatrix":
		switch {
		case has("x4"):
			return 4 * costMatrix
		case has("x2"):
			return 2 * costMatrix
		}
		return costMatrix
	case "cp":
		if has("async") {
			return costAsync
		}
	case "ld", "st", "atom", "red":
		if !has("shared") && !has("shared::cta") {
			if has("param") {
				return 1
			}
			return costGlobal
		}
		words := int64(1)
		for _, m := range mods {
			switch m {
			case "v2":
				words *= 2
			case "v4":
				words *= 4
			case "b64", "u64", "s64", "f64":
				words *= 2
			}
		}
		return costSharedBase + costSharedWord*words
	case "ex2", "lg2", "rcp", "rsqrt", "sqrt", "sin", "cos", "tanh":
		if has("approx") {
			return costApprox
		}
	}
	return 1
}
