package api

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newTestTools makes tools confined to a new directory that holds files,
// next to a sibling directory "outside" with a secret in it.
func newTestTools(t *testing.T, files map[string]string) (*tools, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "work")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := newTools(root, 10*time.Second, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return ts, root
}

// call runs a tool with arguments given as a Go value.
func call(t *testing.T, ts *tools, name string, args any) toolResult {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return ts.call(context.Background(), toolCall{ID: "c1", Name: name, Args: string(b)})
}

func wantOK(t *testing.T, r toolResult, contains ...string) {
	t.Helper()
	if r.IsError {
		t.Fatalf("%s: error %q", r.Name, r.Content)
	}
	for _, c := range contains {
		if !strings.Contains(r.Content, c) {
			t.Errorf("%s: result %q lacks %q", r.Name, r.Content, c)
		}
	}
}

func wantError(t *testing.T, r toolResult, contains ...string) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("%s: no error, result %q", r.Name, r.Content)
	}
	for _, c := range contains {
		if !strings.Contains(r.Content, c) {
			t.Errorf("%s: error %q lacks %q", r.Name, r.Content, c)
		}
	}
}

// TestEscapes: no file tool reaches outside the work directory, through
// .., an absolute path, a symbolic link to a directory or a file, or a
// dangling link a write would follow; and nothing outside changes.
func TestEscapes(t *testing.T) {
	ts, root := newTestTools(t, map[string]string{"a.txt": "a\n"})
	outside := filepath.Join(filepath.Dir(root), "outside")
	for _, l := range [][2]string{
		{outside, "dirlink"},
		{filepath.Join(outside, "secret.txt"), "filelink"},
		{filepath.Join(outside, "new.txt"), "dangling"},
		{"../outside/secret.txt", "rellink"},
	} {
		if err := os.Symlink(l[0], filepath.Join(root, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{
		"../outside/secret.txt",
		"sub/../../outside/secret.txt",
		filepath.Join(outside, "secret.txt"),
		"/etc/passwd",
		"..",
	} {
		wantError(t, call(t, ts, "read_file", map[string]any{"path": p}), "outside the project directory")
		wantError(t, call(t, ts, "write_file", map[string]any{"path": p, "content": "x"}), "outside the project directory")
	}
	for _, p := range []string{"dirlink/secret.txt", "filelink", "rellink", "dirlink/new.txt", "dangling"} {
		wantError(t, call(t, ts, "read_file", map[string]any{"path": p}), "through a symbolic link")
		wantError(t, call(t, ts, "write_file", map[string]any{"path": p, "content": "pwned"}), "through a symbolic link")
		wantError(t, call(t, ts, "edit_file", map[string]any{"path": p, "old_string": "secret", "new_string": "pwned"}), "through a symbolic link")
	}
	wantError(t, call(t, ts, "list_files", map[string]any{"path": "dirlink"}), "through a symbolic link")
	wantError(t, call(t, ts, "search", map[string]any{"pattern": "secret", "path": "dirlink"}), "through a symbolic link")
	wantError(t, call(t, ts, "list_files", map[string]any{"path": "../outside"}), "outside the project directory")
	// A search of the whole directory does not follow the links out.
	wantOK(t, call(t, ts, "search", map[string]any{"pattern": "secret"}), "[no matches]")

	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("outside holds %d files, want only secret.txt", len(entries))
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "secret\n" {
		t.Errorf("secret.txt = %q", b)
	}
	// Inside, .. and absolute paths are fine, and so is a link that stays.
	if err := os.Symlink("a.txt", filepath.Join(root, "inlink")); err != nil {
		t.Fatal(err)
	}
	wantOK(t, call(t, ts, "read_file", map[string]any{"path": "sub/../a.txt"}), "a")
	wantOK(t, call(t, ts, "read_file", map[string]any{"path": filepath.Join(root, "a.txt")}), "a")
	wantOK(t, call(t, ts, "read_file", map[string]any{"path": "inlink"}), "a")
}

func TestEdit(t *testing.T) {
	ts, root := newTestTools(t, map[string]string{"f.go": "a := 1\nb := 1\n\tc := 2\n"})
	wantError(t, call(t, ts, "edit_file", map[string]any{"path": "f.go", "old_string": "z := 9", "new_string": "x"}),
		"old_string was not found in f.go")
	wantError(t, call(t, ts, "edit_file", map[string]any{"path": "f.go", "old_string": "c  :=  2", "new_string": "x"}),
		"different whitespace")
	wantError(t, call(t, ts, "edit_file", map[string]any{"path": "f.go", "old_string": ":= 1", "new_string": ":= 3"}),
		"old_string occurs 2 times in f.go")
	wantError(t, call(t, ts, "edit_file", map[string]any{"path": "f.go", "old_string": "", "new_string": "x"}), "old_string is empty")
	wantError(t, call(t, ts, "edit_file", map[string]any{"path": "nope.go", "old_string": "a", "new_string": "x"}), "nope.go: no such file")
	if b, _ := os.ReadFile(filepath.Join(root, "f.go")); string(b) != "a := 1\nb := 1\n\tc := 2\n" {
		t.Fatalf("a failed edit changed the file: %q", b)
	}
	wantOK(t, call(t, ts, "edit_file", map[string]any{"path": "f.go", "old_string": "b := 1", "new_string": "b := 5"}), "replaced 1 occurrence")
	wantOK(t, call(t, ts, "edit_file", map[string]any{"path": "f.go", "old_string": ":= ", "new_string": "= ", "replace_all": true}), "replaced 3 occurrences")
	if b, _ := os.ReadFile(filepath.Join(root, "f.go")); string(b) != "a = 1\nb = 5\n\tc = 2\n" {
		t.Errorf("f.go = %q", b)
	}
}

func TestReadFile(t *testing.T) {
	var lines []string
	for i := 1; i <= 3000; i++ {
		lines = append(lines, "line")
	}
	ts, _ := newTestTools(t, map[string]string{
		"long.txt":  strings.Join(lines, "\n") + "\n",
		"wide.txt":  strings.Repeat("x", 5000) + "\nend\n",
		"bin.dat":   "a\x00b",
		"empty.txt": "",
		"d/x.txt":   "x",
	})
	r := call(t, ts, "read_file", map[string]any{"path": "long.txt", "offset": 10, "limit": 3})
	wantOK(t, r, "    10\tline\n    11\tline\n    12\tline\n", "[lines 10-12 of 3000; read on with offset 13]")
	if strings.Contains(r.Content, "    13\t") {
		t.Errorf("limit not kept: %q", r.Content)
	}
	r = call(t, ts, "read_file", map[string]any{"path": "long.txt"})
	wantOK(t, r, "[lines 1-")
	if len(r.Content) > maxResult {
		t.Errorf("result of %d bytes", len(r.Content))
	}
	wantOK(t, call(t, ts, "read_file", map[string]any{"path": "wide.txt"}), "[line cut]", "     2\tend")
	wantError(t, call(t, ts, "read_file", map[string]any{"path": "long.txt", "offset": 4000}), "offset 4000 is past its end")
	wantError(t, call(t, ts, "read_file", map[string]any{"path": "bin.dat"}), "binary")
	wantError(t, call(t, ts, "read_file", map[string]any{"path": "d"}), "is a directory")
	wantError(t, call(t, ts, "read_file", map[string]any{"path": "long.txt", "offset": "ten"}), `argument "offset": want a int, got a JSON string`)
	wantOK(t, call(t, ts, "read_file", map[string]any{"path": "empty.txt"}), "empty")
}

func TestShell(t *testing.T) {
	ts, root := newTestTools(t, nil)
	wantOK(t, call(t, ts, "shell", map[string]any{"command": "pwd; echo err >&2"}), root, "err\n", "[exit status 0]")
	wantError(t, call(t, ts, "shell", map[string]any{"command": "echo broken; exit 3"}), "broken\n[exit status 3]")
	// A flood is cut in the middle: its start and end are kept.
	r := call(t, ts, "shell", map[string]any{"command": "echo START; yes | head -c 300000; echo; echo END"})
	wantOK(t, r, "START", "END", "bytes of output cut")
	if len(r.Content) > maxResult {
		t.Errorf("result of %d bytes", len(r.Content))
	}
	start := time.Now()
	wantError(t, call(t, ts, "shell", map[string]any{"command": "echo before; sleep 30", "timeout_seconds": 1}),
		"before", "timed out after 1s")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the timeout took %s", d)
	}
	wantError(t, call(t, ts, "shell", map[string]any{"command": " "}), "command is empty")
	// A huge timeout is the longest one, not one overflowed into the past.
	wantOK(t, call(t, ts, "shell", map[string]any{"command": "echo hi", "timeout_seconds": 1e10}), "hi\n", "[exit status 0]")
}

// TestNotFiles: a named pipe is neither read nor written nor edited, at
// once: opening one would wait for the other end, for ever.
func TestNotFiles(t *testing.T) {
	ts, root := newTestTools(t, nil)
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wantError(t, call(t, ts, "read_file", map[string]any{"path": "pipe"}), "pipe is not a regular file")
		wantError(t, call(t, ts, "write_file", map[string]any{"path": "pipe", "content": "x"}), "pipe is not a regular file")
		wantError(t, call(t, ts, "edit_file", map[string]any{"path": "pipe", "old_string": "a", "new_string": "b"}), "pipe is not a regular file")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a tool waited on the named pipe")
	}
}

func TestListAndSearch(t *testing.T) {
	ts, _ := newTestTools(t, map[string]string{
		"main.go":        "package main\n\nfunc main() {}\n",
		"pkg/a/a.go":     "package a\n// TODO: more\n",
		"pkg/a/a_test.g": "x",
		"pkg/b/b.go":     "package b\nfunc Todo() {}\n",
		"README.md":      "todo list\n",
		".git/config":    "TODO in git\n",
	})
	wantOK(t, call(t, ts, "list_files", map[string]any{}), "README.md\n", "main.go\n", "pkg/\n")
	r := call(t, ts, "list_files", map[string]any{"pattern": "**/*.go"})
	wantOK(t, r, "main.go\npkg/a/a.go\npkg/b/b.go\n")
	wantOK(t, call(t, ts, "list_files", map[string]any{"path": "pkg", "pattern": "*/a.go"}), "a/a.go")
	wantOK(t, call(t, ts, "list_files", map[string]any{"pattern": "*.rs"}), "[nothing found]")
	// A malformed glob is the model's mistake to hear of, not an empty result.
	wantError(t, call(t, ts, "list_files", map[string]any{"pattern": "pkg/["}), `pattern "pkg/[": syntax error in pattern`)
	wantError(t, call(t, ts, "search", map[string]any{"pattern": "TODO", "glob": "*.[go"}), `glob "*.[go": syntax error in pattern`)
	r = call(t, ts, "search", map[string]any{"pattern": "TODO"})
	wantOK(t, r, "pkg/a/a.go:2: // TODO: more")
	if strings.Contains(r.Content, ".git") {
		t.Errorf("search looked into .git: %q", r.Content)
	}
	r = call(t, ts, "search", map[string]any{"pattern": "todo", "ignore_case": true, "glob": "*.go"})
	wantOK(t, r, "pkg/a/a.go:2:", "pkg/b/b.go:2: func Todo() {}")
	if strings.Contains(r.Content, "README") {
		t.Errorf("glob not applied: %q", r.Content)
	}
	wantError(t, call(t, ts, "search", map[string]any{"pattern": "("}), "pattern: error parsing regexp")
}

func TestBounds(t *testing.T) {
	s := cut(strings.Repeat("é", 100000), 1000)
	if len(s) > 1000 || !strings.Contains(s, "bytes cut") || !strings.HasPrefix(s, "é") || !strings.HasSuffix(s, "é") {
		t.Errorf("cut: %d bytes, %q…", len(s), s[:40])
	}
	c := newClip(10, 10)
	c.Write([]byte("0123456789abcdefghijklmnopqrstuvwxyz"))
	if got, want := c.String(), "0123456789\n[… 16 bytes of output cut …]\nqrstuvwxyz"; got != want {
		t.Errorf("clip = %q, want %q", got, want)
	}
	c = newClip(10, 10)
	c.Write([]byte("short"))
	if got := c.String(); got != "short" {
		t.Errorf("clip = %q", got)
	}
}
