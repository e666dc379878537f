package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGPUResultsQuotesDefaultReplay: where docs/gpu-results.md cites the Python host's
// log, the graph-replay time it quotes for the default shape is the log's for that shape
// (its first folder, dsv4_default_t1); it quoted the last folder's 6.58 us, where the
// default measured 15.99.
func TestGPUResultsQuotesDefaultReplay(t *testing.T) {
	page, err := os.ReadFile("../docs/gpu-results.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "python-host-h200.log") {
		t.Skip("docs/gpu-results.md does not cite the Python host's log")
	}
	log, err := os.ReadFile("../docs/python-host-h200.log")
	if err != nil {
		t.Fatal(err)
	}
	replay := regexp.MustCompile(`([0-9.]+) us per graph replay`)
	first := replay.FindSubmatch(log)
	if first == nil || !strings.HasPrefix(string(log), "dsv4_default_t1:") {
		t.Fatalf("the log does not start with the default shape's folder and its replay time")
	}
	want := regexp.MustCompile(regexp.QuoteMeta(string(first[1])) + ` us per replay[^.]*default shape`)
	if !want.Match(page) {
		t.Errorf("docs/gpu-results.md does not quote the default shape's %s us per graph replay (the log's dsv4_default_t1)", first[1])
	}
}

// TestDocsCiteExistingFiles: every file the documentation cites exists: a relative
// link's target; a path under one of the repository's top-level folders (the text's own
// examples aside, such as a build/ output); a bare name of a Markdown, Python or shell
// file (there is no DEVELOPERS.md); and under ../shared, the files beside the checkout
// (named ../shared/..., from the repository's root, not shared/...).
func TestDocsCiteExistingFiles(t *testing.T) {
	root := ".."
	pages := []string{"README.md", "DESIGN.md"}
	for _, glob := range []string{"docs/*.md", "examples/*/README.md"} {
		ms, _ := filepath.Glob(filepath.Join(root, glob))
		for _, m := range ms {
			rel, _ := filepath.Rel(root, m)
			pages = append(pages, rel)
		}
	}
	topLevel := map[string]bool{}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() != "build" {
			topLevel[e.Name()] = true
		}
	}
	// Bare names exist somewhere in the repository.
	names := map[string]bool{}
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if err == nil {
			names[d.Name()] = true
		}
		return nil
	})
	_, sharedErr := os.Stat(filepath.Join(root, "..", "shared"))
	link := regexp.MustCompile(`\]\(([^)#\s]+)(?:#[^)]*)?\)`)
	// A path: folders, then a file name with an extension or a final slash; not one
	// that a glob or a brace list goes on (lower/emit_*.go), nor a ratio (ptxgen/FlashMLA).
	path := regexp.MustCompile(`(?:^|[\s(` + "`" + `])((?:\.\./)?[A-Za-z_][\w.-]*(?:/[\w.-]+)*(?:/[\w-]+\.[A-Za-z0-9]+|/))(?:[^\w*{/]|$)`)
	bare := regexp.MustCompile(`(?:^|[\s(` + "`" + `])([\w-]+\.(?:md|py|sh))\b`)
	for _, page := range pages {
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(page)
		exists := func(p string) bool {
			for _, c := range []string{filepath.Join(root, p), filepath.Join(root, dir, p)} {
				if _, err := os.Stat(c); err == nil {
					return true
				}
			}
			return false
		}
		// A bare name the page also cites by a path that exists (vs.py after
		// ../shared/anchors/flashmla/vs.py) is that file.
		cited := map[string]bool{}
		for _, m := range path.FindAllStringSubmatch(string(data), -1) {
			p := strings.TrimRight(m[1], ".,:;")
			if exists(p) || strings.HasPrefix(p, "../shared/") && sharedErr != nil {
				cited[filepath.Base(p)] = true
			}
		}
		for i, line := range strings.Split(string(data), "\n") {
			at := fmt.Sprintf("%s:%d", page, i+1)
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				if p := m[1]; !strings.Contains(p, "://") && !exists(p) {
					t.Errorf("%s: the link to %s leads nowhere", at, p)
				}
			}
			for _, m := range path.FindAllStringSubmatch(line, -1) {
				p := strings.TrimRight(m[1], ".,:;")
				first, _, _ := strings.Cut(p, "/")
				switch {
				case first == "shared":
					t.Errorf("%s: %s: the shared files are ../shared/..., beside the checkout", at, p)
				case first == "..":
					if rest, ok := strings.CutPrefix(p, "../shared/"); ok && sharedErr == nil && !exists(filepath.Join("..", "shared", rest)) {
						t.Errorf("%s: %s is not in ../shared", at, p)
					}
				case topLevel[first] && !exists(p):
					t.Errorf("%s: %s is not in the repository", at, p)
				}
			}
			for _, m := range bare.FindAllStringSubmatch(line, -1) {
				if !names[m[1]] && !cited[m[1]] {
					t.Errorf("%s: %s is not in the repository", at, m[1])
				}
			}
		}
	}
}

// TestREADMENamesShared: the README says where the kernel contract and the test-vector
// format live, in ../shared beside the checkout (it never said).
func TestREADMENamesShared(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"../shared/spec/dsv4-sparse-mla-decode.md", "../shared/testvectors/README.md"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("the README does not name %s", want)
		}
	}
}
