package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-harness/ralph/loop"
)

func TestLiveView(t *testing.T) {
	var term bytes.Buffer
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	v := &liveView{term: &term, width: func() int { return 200 }, now: func() time.Time { return clock }, atStart: true}
	out := v.writer(&term)
	cost := 0.25
	v.event(loop.Event{Event: loop.EventLoopStarted, Tokens: 1500, CostUSD: &cost})

	// Before the first iteration there is nothing to show.
	out.Write([]byte("hello\n"))
	if got := term.String(); got != "hello\n" {
		t.Fatalf("before any iteration: %q", got)
	}

	v.event(loop.Event{Event: loop.EventIterationStarted, Iteration: 3, Story: "US-002", Attempt: 2, MaxAttempts: 5})
	clock = clock.Add(83 * time.Second)
	term.Reset()
	out.Write([]byte("line\n"))
	want := "line\n\r\x1b[Kralph ▸ iteration 3 · US-002 (attempt 2/5) · agent running · 1m23s · 1.5k tokens · $0.25"
	if got := term.String(); got != want {
		t.Fatalf("after a line:\n got %q\nwant %q", got, want)
	}

	// A partial line: the status is taken away and not put back until the
	// line ends, so the two never share a line.
	term.Reset()
	out.Write([]byte("part"))
	if got := term.String(); got != "\r\x1b[Kpart" {
		t.Fatalf("partial line: %q", got)
	}
	term.Reset()
	v.draw()
	if term.Len() != 0 {
		t.Fatalf("drawn in the middle of a line: %q", term.String())
	}
	passed := true
	cost2 := 0.5
	v.event(loop.Event{Event: loop.EventAgentFinished, InputTokens: 900, OutputTokens: 100, CostUSD: &cost2})
	v.event(loop.Event{Event: loop.EventCheckFinished, Passed: &passed})
	out.Write([]byte(" end\n"))
	if got := term.String(); !strings.HasSuffix(got, "checks running · 1m23s · checks 1/1 passed · 2.5k tokens · $0.75") || !strings.HasPrefix(got, " end\n\r\x1b[K") {
		t.Fatalf("after the line ended: %q", got)
	}

	// A narrow terminal cuts the line; colour marks it when allowed.
	term.Reset()
	v.width = func() int { return 20 }
	v.color = true
	v.draw()
	if got := term.String(); got != "\r\x1b[K\x1b[7mralph ▸ iteration …\x1b[0m" {
		t.Fatalf("narrow, coloured: %q", got)
	}
}

// TestIsTerminal: only a terminal gets the live view. /dev/null is a
// character device too, where `ralph loop >/dev/null` and benchmarks send
// the output: drawing a status line there is work for nothing.
func TestIsTerminal(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, f := range []*os.File{devNull, file, w} {
		if isTerminal(f) {
			t.Errorf("isTerminal(%s) = true", f.Name())
		}
	}
	// The master side of a pseudo-terminal is a terminal.
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal to try: %v", err)
	}
	defer ptmx.Close()
	if !isTerminal(ptmx) {
		t.Errorf("isTerminal(/dev/ptmx) = false")
	}
}

// TestFitWidth: the status line is cut to the terminal's columns, not its
// characters: a wide character takes two, a combining mark none.
func TestFitWidth(t *testing.T) {
	for _, c := range []struct {
		line  string
		width int
		want  string
	}{
		{"iteration 1 · US-001", 80, "iteration 1 · US-001"},
		{"iteration 1 · US-001", 10, "iteratio…"},
		{"購物車購物車", 13, "購物車購物車"},
		{"購物車購物車", 12, "購物車購物…"},
		{"購物車購物車", 11, "購物車購…"},
		{"café́ latte", 11, "café́ latte"},
		{"anything", 1, "anything"},
		{"🚀⚡✅ go", 10, "🚀⚡✅ go"},
		{"🚀⚡✅ go", 9, "🚀⚡✅ …"},
		{"🚀⚡✅ go", 8, "🚀⚡✅…"},
	} {
		got := fitWidth(c.line, c.width)
		if got != c.want {
			t.Errorf("fitWidth(%q, %d) = %q, want %q", c.line, c.width, got, c.want)
		}
		if c.width > 1 && displayWidth(got) >= c.width {
			t.Errorf("fitWidth(%q, %d) = %q: %d columns", c.line, c.width, got, displayWidth(got))
		}
	}
}
