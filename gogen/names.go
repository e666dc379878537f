package gogen

import (
	"go/token"
	"strings"
	"unicode"
)

// initialisms are the name parts written in capitals in exported identifiers, as Go
// does for ID and URL: mla_decode becomes MLADecode, kv_cache KVCache.
var initialisms = map[string]bool{
	"api": true, "cpu": true, "cta": true, "fp8": true, "gemm": true, "gpu": true, "id": true,
	"kv": true, "lse": true, "mla": true, "ptx": true, "qk": true, "sm": true, "swa": true,
}

// nameParts splits a snake_case, kebab-case or camelCase name into lower-case parts.
func nameParts(s string) []string {
	var parts []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			parts = append(parts, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ':
			flush()
			continue
		case unicode.IsUpper(r) && len(cur) > 0:
			// A capital starts a new part after a lower-case letter or digit, and ends a
			// run of capitals when a lower-case letter follows (KVCache: KV, Cache).
			prev := rs[i-1]
			if !unicode.IsUpper(prev) || i+1 < len(rs) && unicode.IsLower(rs[i+1]) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return parts
}

// exportedName turns a kernel, field or parameter name into an exported Go identifier
// (gemm: GEMM, mla_decode: MLADecode, a: A).
func exportedName(s string) string {
	var b strings.Builder
	for _, p := range nameParts(s) {
		if initialisms[p] {
			b.WriteString(strings.ToUpper(p))
			continue
		}
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	return b.String()
}

// localName turns a parameter name into an unexported Go identifier (kv_cache: kvCache).
func localName(s string) string {
	parts := nameParts(s)
	if len(parts) == 0 {
		return ""
	}
	return parts[0] + exportedName(strings.Join(parts[1:], "_"))
}

// unexportedPrefix lower-cases the leading capitals of an exported type name, for the
// names of its unexported helpers: GEMM gives gemm, MLADecode mlaDecode, Proj proj.
func unexportedPrefix(typ string) string {
	rs := []rune(typ)
	n := 0
	for n < len(rs) && unicode.IsUpper(rs[n]) {
		n++
	}
	if n > 1 && n < len(rs) && unicode.IsLower(rs[n]) {
		n-- // MLADecode: the D starts the next word
	}
	for i := 0; i < n; i++ {
		rs[i] = unicode.ToLower(rs[i])
	}
	return string(rs)
}

// isExportedIdent reports whether s can name the generated type.
func isExportedIdent(s string) bool {
	return token.IsIdentifier(s) && token.IsExported(s)
}

// IsTypeName reports whether s can name the generated type (Options.Type): an exported
// Go identifier.
func IsTypeName(s string) bool { return isExportedIdent(s) }

// predeclared are Go's predeclared identifiers; parameters are renamed rather than shadow
// them, so that the generated code reads plainly.
var predeclared = map[string]bool{
	"any": true, "append": true, "bool": true, "byte": true, "cap": true, "clear": true,
	"close": true, "comparable": true, "complex": true, "complex128": true, "complex64": true,
	"copy": true, "delete": true, "error": true, "false": true, "float32": true, "float64": true,
	"imag": true, "int": true, "int16": true, "int32": true, "int64": true, "int8": true,
	"iota": true, "len": true, "make": true, "max": true, "min": true, "new": true, "nil": true,
	"panic": true, "print": true, "println": true, "real": true, "recover": true, "rune": true,
	"string": true, "true": true, "uint": true, "uint16": true, "uint32": true, "uint64": true,
	"uint8": true, "uintptr": true,
}
