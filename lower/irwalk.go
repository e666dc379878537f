package lower

// Helpers every pass shares: walks over the IR and facts of it that no pass
// decides, and small arithmetic. They sit below the passes, so that a pass
// borrows nothing from a pass after it.

import (
	"strconv"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
)

// gcd is the greatest common divisor of a and b.
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func roundUp(x, g int) int { return (x + g - 1) / g * g }

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
// and layout (WarpsFor) need it before the roles pass; values legalize adds take
// their op's role (ValueRole).
func valueRoles(k *ir.Kernel) map[*ir.Value]string {
	of := map[*ir.Value]string{}
	ir.WalkOps(k.Body, func(o *ir.Op) {
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
			if ir.PlacesRoles(o) {
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
			if o.Role != "" || ir.PlacesRoles(o) || !placesRolesWithin(o) {
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
	if ir.PlacesRoles(o) {
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
