package main

import (
	"os"
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
