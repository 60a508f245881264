package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// noopAgent writes the benchmarks' agent: a shell script that reads its
// prompt and claims done, the cheapest agent there is.
func noopAgent(b *testing.B) (dir, script string) {
	b.Helper()
	dir = b.TempDir()
	script = filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho '<ralph>done</ralph>'\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	return dir, script
}

// benchPrompt is a prompt of a usual size.
var benchPrompt = strings.Repeat("You are one iteration of a Ralph loop; work on the task below.\n", 40)

// BenchmarkRunNoop runs the no-op agent as the loop does; compare with
// BenchmarkExecNoop, the same agent run by os/exec alone: the difference is
// what Run adds to every iteration.
func BenchmarkRunNoop(b *testing.B) {
	dir, script := noopAgent(b)
	env := os.Environ()
	for b.Loop() {
		res, err := Run(context.Background(), Options{
			Argv: []string{script}, Dir: dir, Env: env, Prompt: benchPrompt,
			Timeout: 0, IdleTimeout: 0, Output: io.Discard, Format: Text,
		})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("Run: %v, exit %d", err, res.ExitCode)
		}
	}
}

// BenchmarkExecNoop is the baseline for BenchmarkRunNoop.
func BenchmarkExecNoop(b *testing.B) {
	dir, script := noopAgent(b)
	for b.Loop() {
		cmd := exec.Command(script)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(benchPrompt)
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// output is what the scanners read in their benchmarks: plain text lines,
// and Claude's stream-json events.
var (
	textOutput   = bytes.Repeat([]byte("building package example.com/shop/internal/http ... ok\n"), 20000)
	claudeOutput = func() []byte {
		var b bytes.Buffer
		for i := range 2000 {
			fmt.Fprintf(&b, `{"type":"assistant","message":{"content":[{"type":"text","text":"Step %d: reading the handler and its test, then changing the error path."}]}}`+"\n", i)
			fmt.Fprintf(&b, `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"go test ./internal/http/..."}}]}}`+"\n")
			fmt.Fprintf(&b, `{"type":"user","message":{"content":[{"type":"tool_result","content":"%s"}]}}`+"\n", strings.Repeat("ok  \\texample.com/shop/internal/http\\t0.012s\\n", 10))
		}
		b.WriteString(`{"type":"result","subtype":"success","is_error":false,"result":"Done.\n<ralph>done</ralph>","total_cost_usd":0.05,"usage":{"input_tokens":12000,"output_tokens":800}}` + "\n")
		return b.Bytes()
	}()
)

// scan feeds out to r in the 32 KiB chunks internal/proc reads.
func scan(b *testing.B, r stdoutReader, out []byte) {
	for len(out) > 0 {
		n := min(len(out), 32<<10)
		r.Write(out[:n])
		out = out[n:]
	}
	var res Result
	r.finish(&res)
	if res.FinalMessage == "" {
		b.Fatal("no final message")
	}
}

// BenchmarkTextReader is the throughput of a plain agent's output through
// ralph: shown as it comes, its tail kept.
func BenchmarkTextReader(b *testing.B) {
	b.SetBytes(int64(len(textOutput)))
	for b.Loop() {
		scan(b, newTextReader(io.Discard), textOutput)
	}
}

// BenchmarkClaudeReader is the throughput of Claude's stream-json through
// ralph: parsed event by event and shown as a readable view.
func BenchmarkClaudeReader(b *testing.B) {
	b.SetBytes(int64(len(claudeOutput)))
	for b.Loop() {
		scan(b, newClaudeReader(io.Discard, time.Now), claudeOutput)
	}
}
