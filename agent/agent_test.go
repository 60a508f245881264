package agent

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Short stop delays keep the tests fast; fallback is a hard limit on agents
// that should end by themselves, so a regression fails instead of hanging.
const (
	testGrace = 100 * time.Millisecond
	fallback  = 20 * time.Second
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// script returns Options running a shell script as the agent.
func script(s string) Options {
	return Options{
		Argv:    []string{"sh", "-c", s, "sh"},
		Env:     os.Environ(),
		Grace:   testGrace,
		Timeout: fallback,
		Output:  &syncBuffer{},
	}
}

func run(tb testing.TB, o Options) Result {
	tb.Helper()
	res, err := Run(context.Background(), o)
	if err != nil {
		tb.Fatalf("Run: %v", err)
	}
	return res
}

func TestPromptOnStdin(t *testing.T) {
	o := script(`echo "args: $#"; cat`)
	o.Prompt = "fix the cart\nplease"
	res := run(t, o)
	if res.ExitCode != 0 || res.Stopped != "" {
		t.Errorf("exit %d, stopped %q; want 0, \"\"", res.ExitCode, res.Stopped)
	}
	if want := "args: 0\nfix the cart\nplease"; res.FinalMessage != want {
		t.Errorf("FinalMessage = %q, want %q", res.FinalMessage, want)
	}
	// The output shown has its last line ended; the final message is the
	// agent's own.
	if got, want := o.Output.(*syncBuffer).String(), res.FinalMessage+"\n"; got != want {
		t.Errorf("Output = %q, want %q", got, want)
	}
}

// TestOutputEndsLine: output the agent left mid-line is ended with a
// newline, for what is written after it; output that ends its line gets
// none, nor does no output at all.
func TestOutputEndsLine(t *testing.T) {
	for _, tc := range []struct{ script, want string }{
		{`printf 'partial'`, "partial\n"},
		{`printf 'partial' >&2`, "partial\n"},
		{`printf 'a line\n'`, "a line\n"},
		{`true`, ""},
	} {
		o := script(tc.script)
		run(t, o)
		if got := o.Output.(*syncBuffer).String(); got != tc.want {
			t.Errorf("%s: Output = %q, want %q", tc.script, got, tc.want)
		}
	}
}

func TestPromptAsArgument(t *testing.T) {
	// stdin is /dev/null: cat ends at once instead of waiting for input.
	o := script(`printf 'arg: %s\n' "$1"; cat; echo end`)
	o.Prompt = "fix the cart"
	o.PromptArg = true
	res := run(t, o)
	if res.Stopped != "" {
		t.Fatalf("stopped %q: cat did not get EOF on stdin", res.Stopped)
	}
	if want := "arg: fix the cart\nend\n"; res.FinalMessage != want {
		t.Errorf("FinalMessage = %q, want %q", res.FinalMessage, want)
	}
	if !slices.Equal(o.Argv, []string{"sh", "-c", `printf 'arg: %s\n' "$1"; cat; echo end`, "sh"}) {
		t.Errorf("Run changed o.Argv to %q", o.Argv)
	}
}

func TestEnv(t *testing.T) {
	o := script(`echo "FOO=$FOO"; echo "CLAUDECODE=${CLAUDECODE-unset}"`)
	o.Env = Environ(append(os.Environ(), "CLAUDECODE=1", "FOO=old"), "FOO=bar")
	res := run(t, o)
	if want := "FOO=bar\nCLAUDECODE=unset\n"; res.FinalMessage != want {
		t.Errorf("FinalMessage = %q, want %q", res.FinalMessage, want)
	}
}

func TestDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agent.sh"), []byte("#!/bin/sh\necho relative to dir\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := script("")
	o.Argv = []string{"./agent.sh"}
	o.Dir = dir
	res := run(t, o)
	if want := "relative to dir\n"; res.FinalMessage != want {
		t.Errorf("FinalMessage = %q, want %q", res.FinalMessage, want)
	}
}

func TestExitCodeAndStderr(t *testing.T) {
	o := script(`echo out; echo "something broke" >&2; exit 3`)
	res := run(t, o)
	if res.ExitCode != 3 {
		t.Errorf("ExitCode = %d, want 3", res.ExitCode)
	}
	if res.Stderr != "something broke\n" {
		t.Errorf("Stderr = %q, want %q", res.Stderr, "something broke\n")
	}
	if res.FinalMessage != "out\n" {
		t.Errorf("FinalMessage = %q, want %q", res.FinalMessage, "out\n")
	}
	// stderr is passed through to the terminal as well.
	if got := o.Output.(*syncBuffer).String(); !strings.Contains(got, "something broke\n") || !strings.Contains(got, "out\n") {
		t.Errorf("Output = %q, want both streams", got)
	}
	if res.Duration <= 0 {
		t.Errorf("Duration = %v, want > 0", res.Duration)
	}
}

func TestStops(t *testing.T) {
	sigint, sigkill := 128+int(syscall.SIGINT), 128+int(syscall.SIGKILL)
	tests := []struct {
		name     string
		script   string
		timeout  time.Duration
		idle     time.Duration
		stopped  string
		exitCode int
	}{
		{"timeout", "sleep 100", 200 * time.Millisecond, 0, StoppedTimeout, sigint},
		{"timeout ignoring SIGINT", "trap '' INT; sleep 100", 200 * time.Millisecond, 0, StoppedTimeout, sigkill},
		{"idle", "echo working; exec sleep 100", fallback, 200 * time.Millisecond, StoppedIdle, sigint},
		{"idle ignoring SIGINT", "trap '' INT; echo working >&2; sleep 100", fallback, 200 * time.Millisecond, StoppedIdle, sigkill},
		{"timeout before idle", "sleep 100", 200 * time.Millisecond, fallback, StoppedTimeout, sigint},
		// 15 lines 50ms apart: 750ms in all, more than twice the idle
		// timeout, but never quiet for a sixth of it.
		{"steady output is not idle", "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo $i; sleep 0.05; done", fallback, 300 * time.Millisecond, "", 0},
		{"steady stderr is not idle", "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo $i >&2; sleep 0.05; done", fallback, 300 * time.Millisecond, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := script(tt.script)
			o.Timeout = tt.timeout
			o.IdleTimeout = tt.idle
			res := run(t, o)
			if res.Stopped != tt.stopped {
				t.Errorf("Stopped = %q, want %q", res.Stopped, tt.stopped)
			}
			if res.ExitCode != tt.exitCode {
				t.Errorf("ExitCode = %d, want %d", res.ExitCode, tt.exitCode)
			}
		})
	}
}

// TestIdleWithInjectedClock runs the idle timeout with o.Now far from the
// real time: timeouts run on the real clock whatever o.Now says.
func TestIdleWithInjectedClock(t *testing.T) {
	for _, at := range []time.Time{time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)} {
		o := script("exec sleep 100")
		o.Timeout = fallback
		o.IdleTimeout = 200 * time.Millisecond
		o.Now = func() time.Time { return at }
		if res := run(t, o); res.Stopped != StoppedIdle {
			t.Errorf("with the clock at %v: Stopped = %q, want %q", at, res.Stopped, StoppedIdle)
		}
	}
}

// TestReaderClock checks that a reset time a CLI gives relative to now is
// resolved on o.Now, so that it is the same in every run of a test.
func TestReaderClock(t *testing.T) {
	at := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	o := script(`echo '{"type":"result","is_error":true,"api_error_status":429,"result":"try again in 2 minutes"}'`)
	o.Format = ClaudeStreamJSON
	o.Now = func() time.Time { return at }
	res := run(t, o)
	if res.Problem == nil || !res.Problem.ResetAt.Equal(at.Add(2*time.Minute)) {
		t.Errorf("Problem = %+v, want a reset at %v", res.Problem, at.Add(2*time.Minute))
	}
}

func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The trap's exit code proves the agent got SIGINT. A trapped signal
	// interrupts wait, and nothing is forked after "ready", so the SIGINT
	// cannot fall into a fork and be missed.
	o := script("trap 'exit 42' INT; sleep 100 & echo ready; wait")
	out := &readyWriter{ready: make(chan struct{})}
	o.Output = out
	go func() {
		<-out.ready
		cancel()
	}()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Stopped != StoppedInterrupted {
		t.Errorf("Stopped = %q, want %q", res.Stopped, StoppedInterrupted)
	}
	if res.ExitCode != 42 {
		t.Errorf("ExitCode = %d, want 42", res.ExitCode)
	}

	// Cancelled before it began: never started, not an error.
	res, err = Run(ctx, script("echo never"))
	if err != nil || res.Stopped != StoppedInterrupted || res.ExitCode != -1 {
		t.Errorf("Run with a cancelled ctx = %+v, %v; want stopped %q, exit -1, nil", res, err, StoppedInterrupted)
	}

	// Cancelled as it was starting, after Run's first look: the start
	// fails, and that is no error either.
	res, err = Run(&cancelledAfterFirstLook{Context: ctx}, script("echo never"))
	if err != nil || res.Stopped != StoppedInterrupted || res.ExitCode != -1 {
		t.Errorf("Run cancelled as the agent starts = %+v, %v; want stopped %q, exit -1, nil", res, err, StoppedInterrupted)
	}
}

// cancelledAfterFirstLook is a cancelled context whose Err says nil the
// first time it is asked: a stop that comes just after Run looked.
type cancelledAfterFirstLook struct {
	context.Context
	looked bool
}

func (c *cancelledAfterFirstLook) Err() error {
	if !c.looked {
		c.looked = true
		return nil
	}
	return c.Context.Err()
}

// readyWriter closes ready on the first write.
type readyWriter struct {
	once  sync.Once
	ready chan struct{}
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.ready) })
	return len(p), nil
}

func TestLargeOutputIsBounded(t *testing.T) {
	// 10 MB on stdout and 1 MB on stderr; only the tails are kept.
	o := script(`head -c 1000000 /dev/zero | tr '\0' e >&2; head -c 10000000 /dev/zero | tr '\0' a; echo; echo "<ralph>done</ralph>"`)
	var shown countWriter
	o.Output = &shown
	res := run(t, o)
	if len(res.FinalMessage) != MaxFinalMessage {
		t.Errorf("len(FinalMessage) = %d, want %d", len(res.FinalMessage), MaxFinalMessage)
	}
	if !strings.HasSuffix(res.FinalMessage, "a\n<ralph>done</ralph>\n") {
		t.Errorf("FinalMessage ends %q, want the end of stdout", res.FinalMessage[max(0, len(res.FinalMessage)-40):])
	}
	if len(res.Stderr) != 4<<10 {
		t.Errorf("len(Stderr) = %d, want %d", len(res.Stderr), 4<<10)
	}
	if want := 10000000 + 1 + len("<ralph>done</ralph>\n") + 1000000; shown.n != want {
		t.Errorf("Output received %d bytes, want %d", shown.n, want)
	}
}

// countWriter counts what it is given; Run serialises writes to Output.
type countWriter struct{ n int }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}

func TestNotFound(t *testing.T) {
	dir := t.TempDir()
	for _, prog := range []string{"ralph-no-such-agent", "./missing.sh", filepath.Join(dir, "missing.sh")} {
		t.Run(prog, func(t *testing.T) {
			o := script("")
			o.Argv = []string{prog, "-p"}
			o.Dir = dir
			res, err := Run(context.Background(), o)
			var nf *NotFoundError
			if !errors.As(err, &nf) {
				t.Fatalf("Run error = %v, want a *NotFoundError", err)
			}
			if nf.Program != prog {
				t.Errorf("Program = %q, want %q", nf.Program, prog)
			}
			if want := `agent program "` + prog + `" not found: `; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error = %q, want it to start with %q", err, want)
			}
			if res.ExitCode != -1 {
				t.Errorf("ExitCode = %d, want -1", res.ExitCode)
			}
		})
	}
}

// TestFindCannotRun: a program that is there and cannot run is a
// *CannotRunError that says why, never a *NotFoundError; one that can run
// is found.
func TestFindCannotRun(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"bad.sh":      "#!/nonexistent/interp -x\necho hi\n",
		"crlf.sh":     "#!/bin/sh\r\necho hi\r\n",
		"empty.sh":    "#!  \necho hi\n",
		"nested.sh":   "#!./dir\n",
		"relative.sh": "#!./ok.sh\n",
		"ok.sh":       "#! /bin/sh -e\necho hi\n",
		"plain":       "echo hi\n",
		"empty":       "",
		"program":     "\x7fELF\x02\x01\x01\x00\x00\x00",
		"long.sh":     "#!/" + strings.Repeat("x", 300) + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "noexec.sh"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		prog, want string // want "": found
	}{
		{"./noexec.sh", `agent program "./noexec.sh" is not executable: chmod +x ` + shellWord(filepath.Join(dir, "noexec.sh"))},
		{"./dir", `agent program "./dir" is a directory: agent.command must name a program`},
		{filepath.Join(dir, "dir"), `agent program "` + filepath.Join(dir, "dir") + `" is a directory: agent.command must name a program`},
		{"./bad.sh", `agent program "./bad.sh" cannot run: its interpreter /nonexistent/interp (its #! line) is not found: install it, or correct the #! line`},
		{"./crlf.sh", `agent program "./crlf.sh" cannot run: its interpreter "/bin/sh\r" (its #! line) is not found: the file has Windows line ends (CRLF)`},
		{"./empty.sh", `agent program "./empty.sh" cannot run: its #! line names no interpreter`},
		{"./nested.sh", `agent program "./nested.sh" cannot run: its interpreter ./dir (its #! line) is a directory`},
		// Relative to where the agent starts.
		{"./relative.sh", ""},
		{"./ok.sh", ""},
		// The system runs no script without a #! line, as a shell would.
		{"./plain", `agent program "./plain" cannot run: it is a script with no #! line: make its first line one (#!/bin/sh)`},
		{"./empty", `agent program "./empty" cannot run: it is empty`},
		{"./program", ""},
		// A line longer than the system reads is not ralph's to judge.
		{"./long.sh", ""},
	} {
		err := Find(tt.prog, dir)
		var cr *CannotRunError
		var nf *NotFoundError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Find(%q) = %v, want it found", tt.prog, err)
		case tt.want == "":
		case !errors.As(err, &cr) || errors.As(err, &nf):
			t.Errorf("Find(%q) = %v, want a *CannotRunError", tt.prog, err)
		case err.Error() != tt.want:
			t.Errorf("Find(%q) = %q, want %q", tt.prog, err, tt.want)
		}
	}
}

func TestStartError(t *testing.T) {
	o := script("true")
	o.Dir = filepath.Join(t.TempDir(), "missing")
	_, err := Run(context.Background(), o)
	var nf *NotFoundError
	if err == nil || errors.As(err, &nf) {
		t.Errorf("Run error = %v, want a start error that is not a *NotFoundError", err)
	}
	if _, err := Run(context.Background(), Options{}); err == nil {
		t.Error("Run with no Argv succeeded, want an error")
	}
}

func TestClaudeStreamJSON(t *testing.T) {
	o := script("")
	o.Argv = []string{"cat", filepath.Join("testdata", "claude-stream.jsonl")}
	o.Format = ClaudeStreamJSON
	res := run(t, o)
	want := Result{
		FinalMessage: "The cart total is now summed and all tests pass.\n\n<ralph>done</ralph>",
		InputTokens:  26 + 9400 + 27900,
		OutputTokens: 208,
		CostUSD:      0.0123,
		CostKnown:    true,
	}
	got := res
	got.Duration = 0
	if got != want {
		t.Errorf("Run = %+v\nwant  %+v", got, want)
	}
	shown := o.Output.(*syncBuffer).String()
	for _, line := range []string{
		"● session started: claude-sonnet-4-5-20250929\n",
		"I'll start by running the tests to see what fails.\n",
		"→ Bash: go test ./...\n",
		"→ Edit: /work/shop/cart.go\n",
		"  ✗ <tool_use_error>String to replace not found in file.\n",
		"✓ result: 12 turns, $0.0123\n",
	} {
		if !strings.Contains(shown, line) {
			t.Errorf("Output lacks %q", line)
		}
	}
	if strings.Contains(shown, `"type"`) {
		t.Errorf("Output shows raw JSON:\n%s", shown)
	}
	golden(t, filepath.Join("testdata", "claude-render.golden"), shown)
}

func TestClaudeAPIError(t *testing.T) {
	o := script("")
	o.Argv = []string{"cat", filepath.Join("testdata", "claude-api-error.jsonl")}
	o.Format = ClaudeStreamJSON
	res := run(t, o)
	if !res.APIError {
		t.Error("APIError = false, want true")
	}
	if !res.CostKnown || res.CostUSD != 0 {
		t.Errorf("cost = %v (known %v), want 0 (known)", res.CostUSD, res.CostKnown)
	}
	if !strings.HasPrefix(res.FinalMessage, "API Error: 529") {
		t.Errorf("FinalMessage = %q, want the API error", res.FinalMessage)
	}
	shown := o.Output.(*syncBuffer).String()
	if want := "✗ result: 1 turn, $0.0000 — API Error: 529"; !strings.Contains(shown, want) {
		t.Errorf("Output = %q, want it to contain %q", shown, want)
	}
}

// TestResetCapped: a reset however far ahead an agent says it is (here
// OpenCode's retry-after header of a billion seconds) is a month ahead at
// most, as one said in words is: the loop sleeps until it.
func TestResetCapped(t *testing.T) {
	o := script(`echo '{"type":"error","timestamp":1700000000000,"error":{"name":"APIError","data":{"message":"Too Many Requests","statusCode":429,"responseHeaders":{"retry-after":"999999999"}}}}'; exit 1`)
	o.Format = OpenCodeJSON
	now := time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)
	o.Now = func() time.Time { return now }
	res := run(t, o)
	p := res.Problem
	if p == nil || p.Kind != RateLimited {
		t.Fatalf("Problem = %+v, want a rate limit", p)
	}
	if want := now.Add(MaxWait); !p.ResetAt.Equal(want) {
		t.Errorf("ResetAt = %v, want %v", p.ResetAt, want)
	}
}

func TestClaudeHugeLine(t *testing.T) {
	dir := t.TempDir()
	result := `{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"after the flood","total_cost_usd":0.5,"usage":{"input_tokens":1,"output_tokens":2}}`
	if err := os.WriteFile(filepath.Join(dir, "result.json"), []byte(result), 0o644); err != nil {
		t.Fatal(err)
	}
	// A 5 MB line (no newline inside it), then the result line, itself
	// without a final newline.
	o := script(`head -c 5000000 /dev/zero | tr '\0' x; echo; echo 'not json'; cat result.json`)
	o.Dir = dir
	o.Format = ClaudeStreamJSON
	res := run(t, o)
	if res.FinalMessage != "after the flood" || res.CostUSD != 0.5 || res.InputTokens != 1 || res.OutputTokens != 2 {
		t.Errorf("Run = %+v; want the result line parsed", res)
	}
	shown := o.Output.(*syncBuffer).String()
	if len(shown) > 1000 {
		t.Errorf("Output holds %d bytes; the huge line should be passed over", len(shown))
	}
	for _, want := range []string{"passed over an output line of 5000000 bytes", "not json\n", "✓ result: 2 turns, $0.5000"} {
		if !strings.Contains(shown, want) {
			t.Errorf("Output = %q, want it to contain %q", shown, want)
		}
	}
}

func TestClaudeNoResult(t *testing.T) {
	// A stopped or crashed agent gives no result event: nothing is taken for
	// a final message, not even the last assistant text.
	o := script(`echo '{"type":"assistant","message":{"content":[{"type":"text","text":"<ralph>done</ralph>"}]}}'; exit 1`)
	o.Format = ClaudeStreamJSON
	res := run(t, o)
	if res.FinalMessage != "" || res.CostKnown || res.ExitCode != 1 {
		t.Errorf("Run = %+v; want no final message, unknown cost, exit 1", res)
	}
}

func golden(tb testing.TB, file, got string) {
	tb.Helper()
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	if got != string(want) {
		tb.Errorf("%s differs (run with -update to rewrite it)\ngot:\n%s\nwant:\n%s", file, got, want)
	}
}

// TestPromptArgs: a preset's prompt flag goes before the prompt, or is
// joined to it when it ends in "=", so that a prompt starting with "-" is
// no flag.
func TestPromptArgs(t *testing.T) {
	for _, c := range []struct {
		flag string
		want []string
	}{
		{"", []string{"- the task"}},
		{"-p", []string{"-p", "- the task"}},
		{"--", []string{"--", "- the task"}},
		{"--prompt=", []string{"--prompt=- the task"}},
	} {
		if got := PromptArgs(c.flag, "- the task"); !slices.Equal(got, c.want) {
			t.Errorf("PromptArgs(%q) = %q, want %q", c.flag, got, c.want)
		}
	}
}

// TestFindRelativeDir: a program given as "./name" is looked for in dir
// even when dir is itself relative, never in $PATH.
func TestFindRelativeDir(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "agent.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Chdir(t.TempDir())
	if err := Find("./agent.sh", "."); err == nil {
		t.Error(`Find("./agent.sh", ".") found the agent in $PATH, want a *NotFoundError`)
	}
	if err := os.WriteFile("agent.sh", []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(bin, "agent.sh"))
	if err := Find("./agent.sh", "."); err != nil {
		t.Errorf(`Find("./agent.sh", ".") = %v, want it found in the directory`, err)
	}
}

// TestFindRelativePATH: a program that only a relative directory in $PATH
// has is refused, as Go's exec refuses it, with what to set instead (its
// path from where the agent starts, or its absolute path when it is not
// under it): no *NotFoundError that says to install it.
func TestFindRelativePATH(t *testing.T) {
	top := t.TempDir()
	t.Chdir(top)
	for _, d := range []string{"bin", "work/bin"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "myagent"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work := filepath.Join(top, "work")
	for _, tt := range []struct {
		path, dir, want string
	}{
		{"bin", top, `agent program "myagent" is found only through a relative directory in $PATH ("bin"), which ralph does not run programs from: put the directory in PATH as an absolute path, or set agent.command = ["./bin/myagent"]`},
		{"./work/bin", work, `agent program "myagent" is found only through a relative directory in $PATH ("work/bin"), which ralph does not run programs from: put the directory in PATH as an absolute path, or set agent.command = ["./bin/myagent"]`},
		{"bin", work, `agent program "myagent" is found only through a relative directory in $PATH ("bin"), which ralph does not run programs from: put the directory in PATH as an absolute path, or set agent.command = ["` + filepath.Join(top, "bin", "myagent") + `"]`},
		{"", top + "/bin", `agent program "myagent" is found only through a relative directory in $PATH ("."), which ralph does not run programs from: put the directory in PATH as an absolute path, or set agent.command = ["./myagent"]`},
	} {
		t.Setenv("PATH", tt.path+string(filepath.ListSeparator)+"/nonexistent")
		if tt.path == "" {
			t.Chdir(filepath.Join(top, "bin"))
		}
		err := Find("myagent", tt.dir)
		var cr *CannotRunError
		var nf *NotFoundError
		switch {
		case !errors.As(err, &cr) || errors.As(err, &nf):
			t.Errorf("PATH=%s: Find = %v, want a *CannotRunError", tt.path, err)
		case err.Error() != tt.want:
			t.Errorf("PATH=%s: Find = %q, want %q", tt.path, err, tt.want)
		}
	}
	// The same directory, absolute, is searched.
	t.Setenv("PATH", filepath.Join(top, "bin"))
	if err := Find("myagent", work); err != nil {
		t.Errorf("PATH=%s: Find = %v, want it found", filepath.Join(top, "bin"), err)
	}
}

// TestPromptArgTooLong: a prompt too long for one argument is refused with
// what to do, not left to the system's "argument list too long".
func TestPromptArgTooLong(t *testing.T) {
	o := script("true")
	o.PromptArg = true
	o.Prompt = strings.Repeat("x", MaxArg+1)
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "one argument holds at most 131071") || !strings.Contains(err.Error(), `agent.prompt = "stdin"`) {
		t.Errorf("Run error = %v, want the prompt's length and what to do", err)
	}
	o.Prompt = strings.Repeat("x", MaxArg)
	if _, err := Run(context.Background(), o); err != nil {
		t.Errorf("a prompt of %d bytes: %v", MaxArg, err)
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"/work/agent.sh":      "/work/agent.sh",
		"./my-agent_2.sh":     "./my-agent_2.sh",
		"/my work/agent.sh":   "'/my work/agent.sh'",
		"/it's/agent.sh":      `'/it'\''s/agent.sh'`,
		"/tmp/$HOME/agent.sh": "'/tmp/$HOME/agent.sh'",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestOutputAfterExit: what a process the agent left running out of its
// group (setsid) prints after the agent exited is shown, and is not read:
// not as its final message (a claim), nor as a result event, nor on
// stderr as a problem. Here the stray prints once the agent's group is
// killed (a member's pipe to it closes then), which is after the exit.
func TestOutputAfterExit(t *testing.T) {
	for _, c := range []struct {
		name   string
		format Format
		mine   string // what the agent prints, before it exits 1
		stray  string // what the stray prints after the exit
		final  string
	}{
		{"text", Text, `echo "not yet"`, `echo "<ralph>done</ralph>"`, "not yet\n"},
		{"claude", ClaudeStreamJSON,
			`echo '{"type":"result","subtype":"success","is_error":false,"result":"not yet"}'`,
			`echo '{"type":"result","subtype":"success","is_error":false,"result":"<ralph>done</ralph>"}'`, "not yet"},
		{"claude without a result", ClaudeStreamJSON,
			`echo '{"type":"assistant","message":{"content":[{"type":"text","text":"working"}]}}'`,
			`echo '{"type":"result","subtype":"success","is_error":false,"result":"<ralph>done</ralph>"}'`, ""},
		{"claude's stderr", ClaudeStreamJSON,
			`echo '{"type":"assistant","message":{"content":[{"type":"text","text":"working"}]}}'`,
			`echo "<ralph>done</ralph>: API Error: 429 rate limit exceeded" >&2`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			o := script(c.mine + `
sleep 100 | setsid sh -c 'touch escaped; cat >/dev/null; ` + strings.ReplaceAll(c.stray, "'", `'\''`) + `' &
while ! test -f escaped; do sleep 0.01; done
exit 1`)
			o.Dir = dir
			o.Format = c.format
			// Long enough to read the stray: it prints at once.
			o.Grace = fallback
			res := run(t, o)
			if res.FinalMessage != c.final || res.Problem != nil || res.Stopped != "" || res.Stderr != "" {
				t.Errorf("FinalMessage %q, Problem %v, Stopped %q, Stderr %q; want %q, none, none, none", res.FinalMessage, res.Problem, res.Stopped, res.Stderr, c.final)
			}
			shown := o.Output.(*syncBuffer).String()
			if !strings.Contains(shown, "[ralph: printed after the agent exited, by a process it left running: shown, not read]\n") ||
				!strings.Contains(shown, "<ralph>done</ralph>") {
				t.Errorf("Output = %q, want the stray's output shown, below ralph's line", shown)
			}
		})
	}
}

// TestNoTimeoutAfterExit: an agent that exited by itself is not stopped
// by a timeout that falls while a process it left running out of its
// group (setsid) still holds its output open: its run is over, and what
// it said stands, as a check's does.
func TestNoTimeoutAfterExit(t *testing.T) {
	for _, c := range []struct {
		name          string
		timeout, idle time.Duration
	}{
		{"timeout", 2 * time.Second, 0},
		{"idle", 0, 2 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// The stray holds the pipe well past the timeouts, and less
			// than the grace period; the timeouts leave the agent itself
			// time to exit on a busy machine.
			o := script(`setsid sh -c 'touch escaped; exec sleep 4' &
while ! test -f escaped; do sleep 0.01; done
echo "<ralph>done</ralph>"`)
			o.Dir = t.TempDir()
			o.Timeout, o.IdleTimeout = c.timeout, c.idle
			o.Grace = fallback
			res := run(t, o)
			if res.Stopped != "" || res.ExitCode != 0 || res.FinalMessage != "<ralph>done</ralph>\n" {
				t.Errorf("Stopped %q, ExitCode %d, FinalMessage %q; want none, 0, the claim", res.Stopped, res.ExitCode, res.FinalMessage)
			}
		})
	}
}
