package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unsafe"

	"github.com/ralph-harness/ralph/loop"
)

// liveView keeps a status line at the bottom of a terminal while the loop
// runs: the iteration, the story, the time it has taken, the checks, and the
// run's tokens and cost. Everything else written to the terminal (the
// agent's output, the narration, warnings) goes through its writers, which
// take the line away before writing and put it back once the output is at
// the start of a line again, so the two never garble each other.
type liveView struct {
	mu      sync.Mutex
	term    io.Writer
	width   func() int
	color   bool
	now     func() time.Time
	shown   bool // the status line is on the screen
	atStart bool // the terminal's output so far ends at the start of a line

	iteration int
	story     string
	attempt   string
	phase     string
	started   time.Time
	checks    int
	passed    int
	tokens    int64
	cost      float64
	costKnown bool

	stop chan struct{}
	done chan struct{}
}

// newLiveView starts a live view on term, redrawn every second.
func newLiveView(term io.Writer, width func() int, color bool) *liveView {
	v := &liveView{
		term: term, width: width, color: color, now: time.Now,
		atStart: true, phase: "starting",
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go v.tick()
	return v
}

func (v *liveView) tick() {
	defer close(v.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
			v.mu.Lock()
			v.draw()
			v.mu.Unlock()
		}
	}
}

// close takes the status line away for good.
func (v *liveView) close() {
	close(v.stop)
	<-v.done
	v.mu.Lock()
	defer v.mu.Unlock()
	v.erase()
}

// viewWriter is one stream through the view: stdout, and stderr when it is
// the same terminal.
type viewWriter struct {
	v *liveView
	w io.Writer
}

// writer wraps a stream that shares the terminal with the status line.
func (v *liveView) writer(w io.Writer) io.Writer { return &viewWriter{v: v, w: w} }

func (vw *viewWriter) Write(p []byte) (int, error) {
	v := vw.v
	v.mu.Lock()
	defer v.mu.Unlock()
	v.erase()
	n, err := vw.w.Write(p)
	if n > 0 {
		v.atStart = p[n-1] == '\n'
	}
	v.draw()
	return n, err
}

// erase takes the status line off the screen.
func (v *liveView) erase() {
	if v.shown {
		io.WriteString(v.term, "\r\x1b[K")
		v.shown = false
	}
}

// draw puts the status line on the screen when the output is at the start
// of a line; in the middle of one it waits, so as not to split it.
func (v *liveView) draw() {
	if !v.atStart || v.iteration == 0 {
		return
	}
	line := fitWidth(v.status(), v.width())
	if v.color {
		line = "\x1b[7m" + line + "\x1b[0m"
	}
	io.WriteString(v.term, "\r\x1b[K"+line)
	v.shown = true
}

// fitWidth cuts line with "…" to fewer columns than width (a line as wide
// as the terminal wraps on some): a terminal shows the wide characters of
// East Asian scripts, and most emoji, in two columns, and a combining mark
// in none. A width under 2 leaves line as it is.
func fitWidth(line string, width int) string {
	if width < 2 || displayWidth(line) < width {
		return line
	}
	used := 0
	for i, r := range line {
		if used+runeColumns(r) > width-2 {
			return line[:i] + "…"
		}
		used += runeColumns(r)
	}
	return line
}

// displayWidth is how many columns of a terminal s takes.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeColumns(r)
	}
	return n
}

// runeColumns is how many columns of a terminal r takes: 2 for the wide
// and fullwidth characters, 0 for combining marks and format characters,
// else 1.
func runeColumns(r rune) int {
	switch {
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	case 0x1100 <= r && r <= 0x115F, // Hangul Jamo
		0x2E80 <= r && r <= 0x303E, // CJK radicals, punctuation
		0x3041 <= r && r <= 0x33FF, // kana, CJK compatibility
		0x3400 <= r && r <= 0x4DBF, // CJK extension A
		0x4E00 <= r && r <= 0x9FFF, // CJK unified ideographs
		0xA000 <= r && r <= 0xA4CF, // Yi
		0xAC00 <= r && r <= 0xD7A3, // Hangul syllables
		0xF900 <= r && r <= 0xFAFF, // CJK compatibility ideographs
		0xFE30 <= r && r <= 0xFE4F, // CJK compatibility forms
		0xFF00 <= r && r <= 0xFF60, // fullwidth forms
		0xFFE0 <= r && r <= 0xFFE6,
		0x1F300 <= r && r <= 0x1F64F, // emoji
		0x1F680 <= r && r <= 0x1F6FF,
		0x1F7E0 <= r && r <= 0x1F7EB,
		0x1F900 <= r && r <= 0x1F9FF,
		0x1FA70 <= r && r <= 0x1FAFF,
		wideSymbol(r),
		0x20000 <= r && r <= 0x3FFFD: // CJK extensions B and on
		return 2
	}
	return 1
}

// wideSymbol reports whether r is one of the symbols before the emoji
// blocks that terminals show as emoji, two columns wide (⚡, ✅, ⭐, ⌛).
func wideSymbol(r rune) bool {
	switch r {
	case 0x231A, 0x231B, 0x23F0, 0x23F3, 0x25FD, 0x25FE, 0x2614, 0x2615, 0x267F, 0x2693, 0x26A1,
		0x26AA, 0x26AB, 0x26BD, 0x26BE, 0x26C4, 0x26C5, 0x26CE, 0x26D4, 0x26EA, 0x26F2, 0x26F3,
		0x26F5, 0x26FA, 0x26FD, 0x2705, 0x270A, 0x270B, 0x2728, 0x274C, 0x274E, 0x2753, 0x2754,
		0x2755, 0x2757, 0x2795, 0x2796, 0x2797, 0x27B0, 0x27BF, 0x2B1B, 0x2B1C, 0x2B50, 0x2B55:
		return true
	}
	return 0x23E9 <= r && r <= 0x23EC || 0x2648 <= r && r <= 0x2653
}

func (v *liveView) status() string {
	parts := []string{
		fmt.Sprintf("ralph ▸ iteration %d", v.iteration),
		v.story + v.attempt,
		v.phase,
		v.now().Sub(v.started).Round(time.Second).String(),
	}
	if v.checks > 0 {
		parts = append(parts, fmt.Sprintf("checks %d/%d passed", v.passed, v.checks))
	}
	parts = append(parts, fmt.Sprintf("%s tokens", shortCount(v.tokens)))
	if v.costKnown {
		parts = append(parts, fmt.Sprintf("$%.2f", v.cost))
	}
	return strings.Join(parts, " · ")
}

// shortCount writes 12345 as 12.3k.
func shortCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// event follows the loop: it is called before the event is narrated.
func (v *liveView) event(ev loop.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch ev.Event {
	case loop.EventLoopStarted:
		v.tokens = ev.Tokens
		if ev.CostUSD != nil {
			v.cost, v.costKnown = *ev.CostUSD, true
		}
	case loop.EventIterationStarted:
		v.iteration, v.story = ev.Iteration, ev.Story
		v.attempt = fmt.Sprintf(" (attempt %d/%d)", ev.Attempt, ev.MaxAttempts)
		v.phase, v.started = "agent running", v.now()
		v.checks, v.passed = 0, 0
	case loop.EventAgentFinished:
		v.phase = "checks running"
		v.tokens += ev.InputTokens + ev.OutputTokens
		if ev.CostUSD != nil {
			v.cost += *ev.CostUSD
			v.costKnown = true
		}
	case loop.EventCheckFinished:
		v.checks++
		if ev.Passed != nil && *ev.Passed {
			v.passed++
		}
	case loop.EventIterationJudged:
		v.phase = ev.Outcome
	case loop.EventWaiting:
		v.phase = "waiting"
		if ev.Until != nil {
			v.phase += " until " + ev.Until.Local().Format("15:04:05")
		}
	}
}

// isTerminal reports whether f is a terminal: a device that answers a
// terminal's request for its size. Being a character device is not enough:
// /dev/null is one.
func isTerminal(f *os.File) bool {
	_, ok := columns(f)
	return ok
}

// canDraw reports whether f is a terminal the status line can be drawn on:
// one whose TERM says it cannot move the cursor (dumb, as in an editor's
// shell buffer) gets plain lines, as a pipe does.
func canDraw(f *os.File) bool {
	return isTerminal(f) && os.Getenv("TERM") != "dumb"
}

// terminalWidth returns the width of the terminal on f, or 80.
func terminalWidth(f *os.File) func() int {
	return func() int {
		if cols, ok := columns(f); ok && cols > 0 {
			return cols
		}
		return 80
	}
}

// columns asks the terminal on f for its width; ok is false when f is no
// terminal.
func columns(f *os.File) (cols int, ok bool) {
	var ws struct{ rows, cols, x, y uint16 }
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TIOCGWINSZ), uintptr(unsafe.Pointer(&ws)))
	return int(ws.cols), errno == 0
}
