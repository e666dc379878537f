package lower

// Helpers every pass shares: walks over the IR and facts of it that no pass
// decides, and small arithmetic. They sit below the passes, so that a pass
// borrows nothing from a pass after it.

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
)

// walkOps visits ops in program order, loop bodies after their loop op.
func walkOps(b *ir.Block, visit func(*ir.Op)) {
	for _, o := range b.Ops {
		visit(o)
		if o.Body != nil {
			walkOps(o.Body, visit)
		}
	}
}

// walkValues visits the kernel's parameters and every value an op or a loop
// body defines.
func walkValues(k *ir.Kernel, visit func(*ir.Value)) {
	for _, p := range k.Params {
		visit(p.Value)
	}
	walkOps(k.Body, func(o *ir.Op) {
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

// useCounts counts each value's uses: as an op argument anywhere in k, and as
// a loop's yielded value.
func useCounts(k *ir.Kernel) map[*ir.Value]int {
	n := map[*ir.Value]int{}
	walkOps(k.Body, func(o *ir.Op) {
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

// pointerParams are the indices of the kernel parameters pointer p may be:
// through bitcasts (which only change the element type) and both arms of every
// select. Nil where some arm is no parameter.
func pointerParams(k *ir.Kernel, p *ir.Value) []int {
	for p.Def != nil && p.Def.Kind == ir.OpBitcast {
		p = p.Def.Args[0]
	}
	if p.Def != nil && p.Def.Kind == ir.OpSelect {
		x, y := pointerParams(k, p.Def.Args[1]), pointerParams(k, p.Def.Args[2])
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

// storageOf is the value that owns v's shared bytes (a transpose is a view).
func storageOf(v *ir.Value) *ir.Value {
	for v.Def != nil && v.Def.Kind == ir.OpTrans {
		v = v.Def.Args[0]
	}
	return v
}

// memOps names the operands of a load or store.
type memOps struct {
	ptr, offs, col0, mask, bound, val *ir.Value
	maskIdx, boundIdx                 int // operand positions, -1 if absent
}

func memOperands(o *ir.Op) memOps {
	a := o.Args
	m := memOps{ptr: a[0], offs: a[1], maskIdx: -1, boundIdx: -1}
	if o.Kind == ir.OpStore {
		m.val = a[len(a)-1]
		a = a[:len(a)-1]
	} else {
		m.val = o.Result()
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
		m.col0 = a[2]
		k = 3
	}
	if o.HasMask {
		m.mask, m.maskIdx = a[k], k
		k++
	}
	if o.HasBound {
		m.bound, m.boundIdx = a[k], k
	}
	return m
}

// placesRoles reports whether loop o, of no role itself, places ops of its body
// on roles.
func placesRoles(o *ir.Op) bool {
	if o.Kind != ir.OpFor || o.Role != "" {
		return false
	}
	for _, bo := range o.Body.Ops {
		if bo.Role != "" {
			return true
		}
	}
	return false
}

// splitByRoles reports whether loop o runs its body's ops on several roles side
// by side: it places ops on roles and every op of its body that loads, stores,
// multiplies, reduces or loops is on one. A loop that places ops on roles and
// runs such an op on every warp too is *phased* instead: each iteration runs a
// role's ops in its region while the other warps wait at the CTA barrier after
// it, as roles do outside loops (what the role leaves in shared memory is then
// every warp's).
func splitByRoles(o *ir.Op) bool {
	if !placesRoles(o) {
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
func everyWarpWork(k ir.OpKind) bool {
	switch k {
	case ir.OpLoad, ir.OpStore, ir.OpDot, ir.OpReduce, ir.OpFor:
		return true
	}
	return false
}

// opError names the op an error is about.
func opError(o *ir.Op, err error) error {
	return fmt.Errorf("%s: %v", o, err)
}

// gcd is the greatest common divisor of a and b.
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func roundUp(x, g int) int { return (x + g - 1) / g * g }

func log2(n int) int { return bits.TrailingZeros(uint(n)) }

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func shapeString(s []int) string {
	p := make([]string, len(s))
	for i, d := range s {
		p[i] = strconv.Itoa(d)
	}
	return strings.Join(p, "x")
}

// nonEmpty drops the empty strings.
func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// valueRoles maps every value an op or a loop body defines to the role that
// computes it ("" = every warp): its op's, or for the carried values and results
// of a loop placing ops on roles (split or phased, or of no role holding such a
// loop in its body) the role that computes the yielded value. It is a fact of
// the kernel as given, computed when the compilation starts (newFn), because
// legalize (a warp split's padding, a dot operand's mask on the operand's role)
// and layout (warpsFor) need it before the roles pass; values legalize adds take
// their op's role (valueRole).
func valueRoles(k *ir.Kernel) map[*ir.Value]string {
	of := map[*ir.Value]string{}
	walkOps(k.Body, func(o *ir.Op) {
		for _, r := range o.Results {
			of[r] = o.Role
		}
		if o.Kind != ir.OpFor {
			return
		}
		// A loop's carried values are its role's; those of a loop placing ops on
		// roles (split or phased), the role's that computes what it yields.
		for i, y := range o.Body.Yield {
			r := o.Role
			if placesRoles(o) {
				r = yieldRole(of, y, o.Args[2+i])
			}
			of[o.Body.Args[1+i]] = r
			of[o.Results[i]] = r
		}
	})
	// A loop of no role that places ops on roles only through a loop in its body
	// carries what that loop computes, so its carried values take the yielded
	// values' roles too, settled after the inner loops (innermost first).
	var settle func(b *ir.Block)
	settle = func(b *ir.Block) {
		for _, o := range b.Ops {
			if o.Kind != ir.OpFor {
				continue
			}
			settle(o.Body)
			if o.Role != "" || placesRoles(o) || !placesRolesWithin(o) {
				continue
			}
			for i, y := range o.Body.Yield {
				r := yieldRole(of, y, o.Args[2+i])
				of[o.Body.Args[1+i]] = r
				of[o.Results[i]] = r
			}
		}
	}
	settle(k.Body)
	return of
}

// placesRolesWithin reports whether loop o, of no role, places ops on roles in its
// body or in the body of a loop of no role there (at any depth).
func placesRolesWithin(o *ir.Op) bool {
	if placesRoles(o) {
		return true
	}
	if o.Kind != ir.OpFor || o.Role != "" {
		return false
	}
	for _, bo := range o.Body.Ops {
		if bo.Kind == ir.OpFor && placesRolesWithin(bo) {
			return true
		}
	}
	return false
}

// yieldRole is the role computing a carried value: the yielded value's, or its
// initial value's when the body yields it unchanged.
func yieldRole(of map[*ir.Value]string, y, init *ir.Value) string {
	if y.Def != nil && y.Def.Role != "" {
		return y.Def.Role
	}
	if r := of[y]; r != "" {
		return r
	}
	return of[init]
}
