package main

import (
	"os"
	"path/filepath"
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
