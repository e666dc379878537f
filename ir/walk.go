package ir

import "fmt"

// WalkOps visits ops in program order, loop bodies after their loop op.
func WalkOps(b *Block, visit func(*Op)) {
	for _, o := range b.Ops {
		visit(o)
		if o.Body != nil {
			WalkOps(o.Body, visit)
		}
	}
}

// WalkValues visits the kernel's parameters and every value an op or a loop
// body defines.
func WalkValues(k *Kernel, visit func(*Value)) {
	for _, p := range k.Params {
		visit(p.Value)
	}
	WalkOps(k.Body, func(o *Op) {
		for _, r := range o.Results {
			visit(r)
		}
		if o.Body != nil {
			for _, a := range o.Body.Args {
				visit(a)
			}
		}
	})
}

// UseCounts counts each value's uses: as an op argument anywhere in k, and as
// a loop's yielded value.
func UseCounts(k *Kernel) map[*Value]int {
	n := map[*Value]int{}
	WalkOps(k.Body, func(o *Op) {
		for _, a := range o.Args {
			n[a]++
		}
		if o.Body != nil {
			for _, y := range o.Body.Yield {
				n[y]++
			}
		}
	})
	return n
}

// PointerParams are the indices of the kernel parameters pointer p may be:
// through bitcasts (which only change the element type) and both arms of every
// select. Nil where some arm is no parameter.
func PointerParams(k *Kernel, p *Value) []int {
	for p.Def != nil && p.Def.Kind == OpBitcast {
		p = p.Def.Args[0]
	}
	if p.Def != nil && p.Def.Kind == OpSelect {
		x, y := PointerParams(k, p.Def.Args[1]), PointerParams(k, p.Def.Args[2])
		if x == nil || y == nil {
			return nil
		}
		return append(x, y...)
	}
	for i, kp := range k.Params {
		if kp.Value == p {
			return []int{i}
		}
	}
	return nil
}

// StorageOf is the value that owns v's shared bytes (a transpose is a view).
func StorageOf(v *Value) *Value {
	for v.Def != nil && v.Def.Kind == OpTrans {
		v = v.Def.Args[0]
	}
	return v
}

// MemOps names the operands of a load or store.
type MemOps struct {
	Ptr, Offs, Col0, Mask, Bound, Val *Value
	MaskIdx, BoundIdx                 int // operand positions, -1 if absent
}

func MemOperands(o *Op) MemOps {
	a := o.Args
	m := MemOps{Ptr: a[0], Offs: a[1], MaskIdx: -1, BoundIdx: -1}
	if o.Kind == OpStore {
		m.Val = a[len(a)-1]
		a = a[:len(a)-1]
	} else {
		m.Val = o.Result()
	}
	n := len(a) - 1
	if o.HasMask {
		n--
	}
	if o.HasBound {
		n--
	}
	k := 2
	if n == 2 {
		m.Col0 = a[2]
		k = 3
	}
	if o.HasMask {
		m.Mask, m.MaskIdx = a[k], k
		k++
	}
	if o.HasBound {
		m.Bound, m.BoundIdx = a[k], k
	}
	return m
}

// PlacesRoles reports whether loop o, of no role itself, places ops of its body
// on roles.
func PlacesRoles(o *Op) bool {
	if o.Kind != OpFor || o.Role != "" {
		return false
	}
	for _, bo := range o.Body.Ops {
		if bo.Role != "" {
			return true
		}
	}
	return false
}

// SplitByRoles reports whether loop o runs its body's ops on several roles side
// by side: it places ops on roles and every op of its body that loads, stores,
// multiplies, reduces or loops is on one. A loop that places ops on roles and
// runs such an op on every warp too is *phased* instead: each iteration runs a
// role's ops in its region while the other warps wait at the CTA barrier after
// it, as roles do outside loops (what the role leaves in shared memory is then
// every warp's).
func SplitByRoles(o *Op) bool {
	if !PlacesRoles(o) {
		return false
	}
	for _, bo := range o.Body.Ops {
		if bo.Role == "" && everyWarpWork(bo.Kind) {
			return false
		}
	}
	return true
}

// everyWarpWork reports whether an op of kind k, of no role, is work every warp
// shares (not index arithmetic each warp may evaluate for itself).
func everyWarpWork(k OpKind) bool {
	switch k {
	case OpLoad, OpStore, OpDot, OpReduce, OpFor:
		return true
	}
	return false
}

// ErrorAt names the op an error is about.
func ErrorAt(o *Op, err error) error {
	return fmt.Errorf("%s: %v", o, err)
}
