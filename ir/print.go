package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Annotator returns a note printed as a trailing comment after the op that defines
// v (the lowering uses it to show layouts and padding); "" prints nothing.
type Annotator func(o *Op) string

// Print renders the kernel in the text form that Parse reads back exactly.
func Print(k *Kernel) string { return PrintAnnotated(k, nil) }

// PrintAnnotated is Print with a trailing comment per op.
func PrintAnnotated(k *Kernel, note Annotator) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel %s(", k.Name)
	for i, p := range k.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %s", p.Value, p.Value.Type)
		if p.Split {
			b.WriteString(" split")
		}
		if p.Div > 1 {
			fmt.Fprintf(&b, " div %d", p.Div)
		}
		if p.Bytes > 0 {
			fmt.Fprintf(&b, " bytes %d", p.Bytes)
		}
		if p.PerRow > 0 {
			fmt.Fprintf(&b, " perrow %d", p.PerRow)
		}
		if p.PerPart > 0 {
			fmt.Fprintf(&b, " perpart %d", p.PerPart)
		}
		if p.Run != 0 || len(p.Strides) > 0 {
			fmt.Fprintf(&b, " strided %d [", p.Run)
			for i, d := range p.Strides {
				if i > 0 {
					b.WriteString(", ")
				}
				if d.CountParam != "" {
					fmt.Fprintf(&b, "%%%s x %%%s / %d", d.Stride, d.CountParam, d.CountDiv)
				} else {
					fmt.Fprintf(&b, "%%%s x %d", d.Stride, d.Count)
				}
			}
			b.WriteString("]")
		}
	}
	b.WriteString(") grid(")
	for i, g := range k.Grid {
		if i > 0 {
			b.WriteString(", ")
		}
		if k.GridParam[i] != "" {
			fmt.Fprintf(&b, "%%%s max ", k.GridParam[i])
		}
		fmt.Fprintf(&b, "%d", g)
	}
	fmt.Fprintf(&b, ") warps %d", k.Warps)
	for _, r := range k.Roles {
		fmt.Fprintf(&b, " role %s %d %d", r.Name, r.First, r.Warps)
	}
	if k.Latency != LatencyAuto {
		fmt.Fprintf(&b, " latency %s", latencyNames[k.Latency])
	}
	b.WriteString(" {\n")
	printBlock(&b, k.Body, 1, note)
	b.WriteString("}\n")
	return b.String()
}

func printBlock(b *strings.Builder, blk *Block, depth int, note Annotator) {
	ind := strings.Repeat("  ", depth)
	for _, o := range blk.Ops {
		b.WriteString(ind)
		b.WriteString(opHeadline(o))
		if note != nil {
			if n := note(o); n != "" {
				b.WriteString("  // " + n)
			}
		}
		b.WriteString("\n")
		if o.Body != nil {
			printBlock(b, o.Body, depth+1, note)
			if len(o.Body.Yield) > 0 {
				fmt.Fprintf(b, "%s  yield %s\n", ind, valueList(o.Body.Yield))
			}
			b.WriteString(ind + "}\n")
		}
	}
}

func valueList(vs []*Value) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	return strings.Join(s, ", ")
}

// FormatFloat prints a float constant so that ParseFloat reads it back exactly.
func FormatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// String prints the op as in the text form (for a loop, its first line).
func (o *Op) String() string { return opHeadline(o) }

// opHeadline prints an op's first (for loops, only) line.
func opHeadline(o *Op) string {
	var b strings.Builder
	if len(o.Results) > 0 {
		b.WriteString(valueList(o.Results))
		b.WriteString(" = ")
	}
	b.WriteString(string(o.Kind))
	a := o.Args
	switch o.Kind {
	case OpProgramID:
		fmt.Fprintf(&b, " %d", o.Int)
	case OpConst:
		if len(o.Results) > 0 && o.Results[0].Type.Elem.IsFloat() {
			b.WriteString(" " + FormatFloat(o.Float))
		} else {
			fmt.Fprintf(&b, " %d", o.Int)
		}
	case OpCmp:
		fmt.Fprintf(&b, " %s %s", o.Pred, valueList(a))
	case OpReduce:
		fmt.Fprintf(&b, " %s %s, %d", o.Pred, valueList(a), o.Int)
	case OpBroadcast, OpColumn, OpSlice:
		fmt.Fprintf(&b, " %s, %d", valueList(a), o.Int)
	case OpLoad, OpStore:
		val := ""
		if o.Kind == OpStore {
			val = ", " + a[len(a)-1].String()
			a = a[:len(a)-1]
		}
		n := len(a) - 1
		if o.HasMask {
			n--
		}
		if o.HasBound {
			n--
		}
		fmt.Fprintf(&b, " %s[%s]", a[0], valueList(a[1:1+n]))
		k := 1 + n
		if o.HasMask {
			fmt.Fprintf(&b, " mask(%s)", a[k])
			k++
		}
		if o.HasBound {
			fmt.Fprintf(&b, " bound(%s)", a[k])
		}
		b.WriteString(val)
	case OpFor:
		iv := o.Body.Args[0]
		fmt.Fprintf(&b, " %s = %s to %s step %d", iv, a[0], a[1], o.Int)
		if o.Stages > 1 {
			fmt.Fprintf(&b, " stages %d", o.Stages)
		}
		if o.Ahead != 0 {
			fmt.Fprintf(&b, " ahead %d", max(o.Ahead, 0))
		}
		if len(a) > 2 {
			b.WriteString(" iter(")
			for i, in := range a[2:] {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s = %s", o.Body.Args[i+1], in)
			}
			b.WriteString(")")
		}
		b.WriteString(roleSuffix(o) + " {")
		return b.String()
	case OpDot:
		b.WriteString(" " + valueList(a))
		if o.Dot != nil {
			b.WriteString(" " + o.Dot.String())
		}
	default:
		if len(a) > 0 {
			b.WriteString(" " + valueList(a))
		}
	}
	if len(o.Results) > 0 {
		b.WriteString(" : " + o.Results[0].Type.String())
	}
	return b.String() + roleSuffix(o)
}

// roleSuffix places an op on its role in the text form: " on NAME".
func roleSuffix(o *Op) string {
	if o.Role == "" {
		return ""
	}
	return " on " + o.Role
}

// latencyNames spell Kernel.Latency in the text form.
var latencyNames = map[Latency]string{LatencyAuto: "auto", LatencySmall: "small", LatencyLarge: "large"}
