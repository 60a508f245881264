package main

import (
	"os"
	"path/filepath"
	"testing"
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
