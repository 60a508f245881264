package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/agent"
)

// TestMakeTests: a Makefile's rule for test, not its mention elsewhere.
func TestMakeTests(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"test:\n\tgo test ./...\n", true},
		{"build:\n\techo hi\n", false},
		{".PHONY: test build\nbuild:\n\ttrue\n", false},
		{"check test: build\n\ttrue\n", true},
		{"test:: a\n\ttrue\n", true},
		{"test := 1\nall:\n\ttrue\n", false},
		{"all:\n\tmake test\n", false},
		{"# test: commented\n", false},
		{"unittest:\n\ttrue\n", false},
		{"test\t: all\n\ttrue\n", true},
		{"test ::= x\n", false},
		{"test:\n", true},
		{"test::\n", true},
	} {
		path := filepath.Join(t.TempDir(), "Makefile")
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := makeTests(path); got != c.want {
			t.Errorf("makeTests(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

// TestHarnessTemplate: the harness.toml init writes is valid for every
// preset, with the checks it may guess and without any.
func TestHarnessTemplate(t *testing.T) {
	for _, preset := range agent.PresetNames() {
		for _, cs := range [][]detectedCheck{nil, {{"vet", "go vet ./..."}, {"test", "go test ./..."}}} {
			if _, err := parseHarness([]byte(harnessTemplate(preset, cs)), harnessFile); err != nil {
				t.Errorf("--preset %s, %d checks: %v", preset, len(cs), err)
			}
		}
	}
}

// TestInitOwnHarnessBroken: a harness.toml of init's own that does not
// parse is ralph's bug, a runtime error (exit 1), not bad usage (exit 2),
// and nothing is written.
func TestInitOwnHarnessBroken(t *testing.T) {
	real := harnessFor
	harnessFor = func(string, []detectedCheck) string { return "[agent\n" }
	t.Cleanup(func() { harnessFor = real })
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	err := newApp(&stdout, &stderr, env{}).Run([]string{"ralph", "-C", dir, "init"})
	if err == nil || !strings.Contains(err.Error(), "a bug in ralph") {
		t.Fatalf("init = %v, want ralph's bug", err)
	}
	if code := exitCode(err); code != exitRuntime {
		t.Errorf("exit code %d, want %d", code, exitRuntime)
	}
	if names, _ := os.ReadDir(dir); len(names) > 0 {
		t.Errorf("init wrote %d files, want none", len(names))
	}
}
