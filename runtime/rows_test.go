package runtime

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ptx"
)

// rowsFacts is shaped like mla_decode: the grid's y is the rows argument (capacity
// 8) and the buffers' sizes grow per row.
func rowsFacts() *ptx.Kernel {
	return &ptx.Kernel{
		Name:      "mla_decode",
		Grid:      [3]int{4, 8, 5},
		GridParam: [3]string{"", "rows", ""},
		Block:     256,
		Params: []ptx.KParam{
			{Name: "rows", Kind: "i32"},
			{Name: "q", Kind: "ptr", Elem: "bf16", PerRow: 1024, Align: 16},
			{Name: "sink", Kind: "ptr", Elem: "f32", Bytes: 256, Align: 4},
			{Name: "ws", Kind: "ptr", Elem: "f32", Bytes: 64, PerRow: 512, Align: 4, Written: true},
		},
	}
}

func TestRowsAtRunTime(t *testing.T) {
	k := rowsFacts()
	if err := CheckFacts(k); err != nil {
		t.Fatalf("CheckFacts: %v", err)
	}
	args := func(rows int32, qBytes, wsBytes int64) []Arg {
		return []Arg{I32(rows), Ptr(buf(0x7f0000000000, qBytes)), Ptr(buf(0x7f0000100000, 256)), Ptr(buf(0x7f0000200000, wsBytes))}
	}
	for _, rows := range []int32{0, 1, 3, 8} {
		q, ws := int64(rows)*1024, 64+int64(rows)*512
		if err := CheckArgs(k, args(rows, q, ws)); err != nil {
			t.Errorf("rows %d with buffers of exactly %d and %d bytes refused: %v", rows, q, ws, err)
		}
		g, err := LaunchGrid(k, args(rows, q, ws))
		if want := [3]int{4, int(rows), 5}; err != nil || g != want {
			t.Errorf("rows %d: grid %v, %v; want %v", rows, g, err, want)
		}
		if rows > 0 {
			err := CheckArgs(k, args(rows, q, ws-1))
			want := "kernel may access " + itoa(ws) + " (64 + 512 per row, " + itoa(int64(rows)) + " rows)"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("rows %d, ws one byte short: %v, want %q", rows, err, want)
			}
		}
	}
	for _, rows := range []int32{9, 65535, -1} {
		err := CheckArgs(k, args(rows, 1<<20, 1<<20))
		var ae *ArgError
		want := "want 0..8 (the capacity the kernel was generated for, -max-tokens 8)"
		if !errors.As(err, &ae) || ae.Name != "rows" || !strings.Contains(err.Error(), itoa(int64(rows))+" rows, "+want) {
			t.Errorf("rows %d: %v, want an ArgError on rows naming %d and %q", rows, err, rows, want)
		}
	}
	bad := args(1, 1024, 1024)
	bad[0] = I64(1)
	if err := CheckArgs(k, bad); err == nil || !strings.Contains(err.Error(), "rows of the call as i32") {
		t.Errorf("i64 rows: %v", err)
	}
	k.GridParam[1] = "q"
	if err := CheckFacts(k); err == nil || !strings.Contains(err.Error(), "want i32") {
		t.Errorf("grid bound to a pointer: CheckFacts says %v", err)
	}
	k.GridParam[1] = "nope"
	if err := CheckFacts(k); err == nil || !strings.Contains(err.Error(), "not a parameter") {
		t.Errorf("grid bound to a missing parameter: CheckFacts says %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestCheckArgsHugePerRow: a kernel declaring 2^62 bytes per row needs more than any
// buffer at 2..4 rows (issue 29: the size wrapped and a 16-byte buffer passed).
func TestCheckArgsHugePerRow(t *testing.T) {
	k := rowsFacts()
	k.Params[1].PerRow = 1 << 62
	for _, rows := range []int32{1, 2, 3, 4} {
		args := []Arg{I32(rows), Ptr(buf(0x7f0000000000, 16)), Ptr(buf(0x7f0000100000, 256)), Ptr(buf(0x7f0000200000, 1<<20))}
		err := CheckArgs(k, args)
		var ae *ArgError
		if !errors.As(err, &ae) || ae.Name != "q" || !strings.Contains(err.Error(), "buffer is 16 bytes") {
			t.Errorf("rows %d, a 16-byte q for 2^62 bytes per row: %v, want it refused naming q", rows, err)
		}
	}
}
