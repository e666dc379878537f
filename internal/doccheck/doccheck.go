// Package doccheck reads the commands docs/bad-inputs.md documents, so that the
// commands' tests can run each one and compare what it prints with the page.
package doccheck

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Entry is one documented command: `COMMAND ARGS` → CODE: TEXT.
type Entry struct {
	Line int
	Args []string // without the command's name
	Code int
	Text string // what follows the status: the first line printed, then remarks
}

// entryRE matches a list item documenting a command: its command line in backquotes,
// maybe a note, an arrow, the exit status and what it prints.
var entryRE = regexp.MustCompile("^- `(ptxgen(?:-gpu)? [^`]*)`[^→]* → ([0-9])(?::? ?(.*))$")

// Parse reads the entries of the page at path for command ("ptxgen" or "ptxgen-gpu").
func Parse(path, command string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []Entry
	for i, line := range strings.Split(string(data), "\n") {
		m := entryRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		words, err := ShellWords(m[1])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, i+1, err)
		}
		if words[0] != command {
			continue
		}
		code, _ := strconv.Atoi(m[2])
		// Markdown escapes | inside the list's text.
		entries = append(entries, Entry{Line: i + 1, Args: words[1:], Code: code, Text: strings.ReplaceAll(m[3], `\|`, "|")})
	}
	return entries, nil
}

// ShellWords splits a command line into words as sh does, with '...' and "..." quoting
// and bash's $'...' with its escapes \n, \t, \\ and \' (no other escapes, no
// expansions), so a page can write an argument holding a newline as a shell would take it.
func ShellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '$' && i+1 < len(s) && s[i+1] == '\'':
			end, err := ansiC(s, i+2, &cur)
			if err != nil {
				return nil, err
			}
			i = end
			inWord = true
		case c == '\'' || c == '"':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %c in %q", c, s)
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += 1 + end
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// ansiC writes the text of a $'...' quote starting at s[i] (after its $') to cur and
// returns the index of its closing quote.
func ansiC(s string, i int, cur *strings.Builder) (int, error) {
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			return i, nil
		case '\\':
			if i+1 == len(s) {
				return 0, fmt.Errorf("unterminated $' in %q", s)
			}
			i++
			switch e := s[i]; e {
			case 'n':
				cur.WriteByte('\n')
			case 't':
				cur.WriteByte('\t')
			case '\\', '\'':
				cur.WriteByte(e)
			default:
				return 0, fmt.Errorf("escape \\%c in $'...' of %q: want \\n, \\t, \\\\ or \\'", e, s)
			}
		default:
			cur.WriteByte(c)
		}
	}
	return 0, fmt.Errorf("unterminated $' in %q", s)
}

// machineDependent are the parts of messages that depend on the machine that prints
// them: the host-memory limit is half of its memory ("the limit is 11.8 GiB" of a
// configuration flag's refusal, "more than the limit of 11.8 GiB" of check -from's).
var machineDependent = regexp.MustCompile(`the limit (?:is|of) [0-9.]+ [KMGT]iB`)

// Printed reports whether the page's text of an entry documents got, the first line
// printed: the text is got, maybe followed by a remark in parentheses or after a
// semicolon, once the machine-dependent parts of both are set aside.
func (e Entry) Printed(got string) bool {
	text := machineDependent.ReplaceAllString(e.Text, "the limit N")
	got = machineDependent.ReplaceAllString(got, "the limit N")
	rest, ok := strings.CutPrefix(text, got)
	return ok && got != "" && (rest == "" || strings.HasPrefix(rest, " (") || strings.HasPrefix(rest, "; "))
}

// Describes reports whether the entry's text is a description rather than the text
// printed (which starts with the command's name).
func (e Entry) Describes(command string) bool { return !strings.HasPrefix(e.Text, command) }

// FromStdout reports whether the page says the text is printed on stdout.
func (e Entry) FromStdout() bool { return strings.Contains(e.Text, "(stdout)") }
