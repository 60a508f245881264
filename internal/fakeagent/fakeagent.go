// Package fakeagent is the scriptable agent that ralph's tests run in place
// of a real one. It is an honest process: it reads its prompt, follows the
// instructions for its turn from files in its directory, and records what it
// received, so tests assert on what ralph really sent and did.
//
// The directory is $FAKEAGENT_DIR (default "fake", relative to the working
// directory). Each run is one turn, counted in the file "turn". The
// instructions for turn N are in the file N, else in "default". The prompt of
// turn N is saved as prompt-N, its arguments and RALPH_* environment as
// env-N.
//
// One instruction per line; blank lines and lines starting with # are
// skipped. Text arguments take \n and \t escapes.
//
//	say TEXT              print TEXT and a newline on stdout
//	print TEXT            print TEXT on stdout, in one write, with no newline
//	stderr TEXT           print TEXT and a newline on stderr
//	write PATH TEXT       write TEXT to PATH (relative to the working directory)
//	append PATH TEXT      append TEXT to PATH
//	fill PATH BYTES       write a file of that many zero bytes to PATH
//	remove PATH           remove PATH
//	replace PATH|OLD|NEW  replace the first OLD in PATH with NEW
//	claim done            print the reply tag <ralph>done</ralph>
//	claim blocked Q       print <ralph>blocked: Q</ralph>
//	echo-prompt           print the prompt it received
//	sleep DURATION        sleep (Go duration syntax)
//	await PATH            wait until PATH exists (at most a minute), so that a
//	                      script acts while the agent works, however slowly
//	                      either runs
//	hang                  sleep until killed
//	ignore-int            ignore SIGINT from now on
//	background DURATION   start a child that sleeps that long holding stdout, and
//	                      write its pid to the file "bg.pid"
//	flood BYTES           print that many bytes of output lines
//	garbage BYTES         print that many random bytes (binary, no newlines)
//	longline BYTES        print one line of that many bytes, with no newline
//	set-status ID KEY JSON  set a field of a story in prd.json (tampering)
//	claude-result TEXT    print claude stream-json events ending in a result
//	                      whose final text is TEXT (usage 100 in, 20 out, $0.01)
//	exit N                exit with status N
package fakeagent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// await waits until path exists, looking every 10 ms, for at most limit.
func await(path string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("await: %s did not appear within %v", path, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Main runs the fake agent and returns its exit status.
func Main() int {
	dir := os.Getenv("FAKEAGENT_DIR")
	if dir == "" {
		dir = "fake"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return die(err)
	}
	turn := 1
	if data, err := os.ReadFile(filepath.Join(dir, "turn")); err == nil {
		n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		turn = n + 1
	}
	if err := os.WriteFile(filepath.Join(dir, "turn"), []byte(strconv.Itoa(turn)+"\n"), 0o644); err != nil {
		return die(err)
	}
	prompt, err := io.ReadAll(os.Stdin)
	if err != nil {
		return die(err)
	}
	if len(prompt) == 0 && len(os.Args) > 1 {
		prompt = []byte(os.Args[len(os.Args)-1])
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("prompt-%d", turn)), prompt, 0o644); err != nil {
		return die(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("env-%d", turn)), []byte(describeEnv()), 0o644); err != nil {
		return die(err)
	}
	script, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(turn)))
	if os.IsNotExist(err) {
		script, err = os.ReadFile(filepath.Join(dir, "default"))
	}
	if os.IsNotExist(err) {
		fmt.Println("fakeagent: no instructions for this turn")
		return 0
	}
	if err != nil {
		return die(err)
	}
	return follow(string(script), string(prompt), dir)
}

func describeEnv() string {
	var b strings.Builder
	fmt.Fprintf(&b, "args: %q\n", os.Args[1:])
	for _, k := range []string{"RALPH_TASK_ID", "RALPH_ITERATION", "RALPH_ATTEMPT", "RALPH_DIR", "CLAUDECODE", "FAKE_EXTRA"} {
		if v, ok := os.LookupEnv(k); ok {
			fmt.Fprintf(&b, "%s=%s\n", k, v)
		}
	}
	return b.String()
}

func follow(script, prompt, dir string) int {
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		rest = unescape(rest)
		switch verb {
		case "say":
			fmt.Println(rest)
		case "print":
			fmt.Print(rest)
		case "stderr":
			fmt.Fprintln(os.Stderr, rest)
		case "write", "append":
			path, text, _ := strings.Cut(rest, " ")
			flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			if verb == "append" {
				flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
			}
			if err := writeFile(path, text, flag); err != nil {
				return die(err)
			}
		case "fill":
			path, size, _ := strings.Cut(rest, " ")
			n, err := strconv.ParseInt(size, 10, 64)
			if err != nil {
				return die(err)
			}
			if err := fill(path, n); err != nil {
				return die(err)
			}
		case "replace":
			parts := strings.SplitN(rest, "|", 3)
			if len(parts) != 3 {
				return die(fmt.Errorf("replace: want PATH|OLD|NEW"))
			}
			data, err := os.ReadFile(parts[0])
			if err != nil {
				return die(err)
			}
			if err := os.WriteFile(parts[0], []byte(strings.Replace(string(data), parts[1], parts[2], 1)), 0o644); err != nil {
				return die(err)
			}
		case "remove":
			if err := os.Remove(rest); err != nil {
				return die(err)
			}
		case "claim":
			kind, q, _ := strings.Cut(rest, " ")
			if kind == "blocked" {
				fmt.Printf("<ralph>blocked: %s</ralph>\n", q)
			} else {
				fmt.Println("<ralph>done</ralph>")
			}
		case "echo-prompt":
			fmt.Print(prompt)
		case "sleep":
			d, err := time.ParseDuration(rest)
			if err != nil {
				return die(err)
			}
			time.Sleep(d)
		case "await":
			if err := await(rest, time.Minute); err != nil {
				return die(err)
			}
		case "hang":
			for {
				time.Sleep(time.Hour)
			}
		case "ignore-int":
			signal.Ignore(syscall.SIGINT)
		case "background":
			if err := background(rest, dir); err != nil {
				return die(err)
			}
		case "flood":
			n, err := strconv.ParseInt(rest, 10, 64)
			if err != nil {
				return die(err)
			}
			flood(n)
		case "garbage", "longline":
			n, err := strconv.ParseInt(rest, 10, 64)
			if err != nil {
				return die(err)
			}
			raw(n, verb == "garbage")
		case "set-status":
			if err := setStatus(rest); err != nil {
				return die(err)
			}
		case "claude-result":
			claudeResult(rest)
		case "exit":
			n, err := strconv.Atoi(rest)
			if err != nil {
				return die(err)
			}
			return n
		default:
			return die(fmt.Errorf("unknown instruction %q", line))
		}
	}
	return 0
}

func unescape(s string) string {
	return strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace(s)
}

func writeFile(path, text string, flag int) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fill writes a file of n zero bytes to path, as an agent that fills the
// guard's budget with files of its own does.
func fill(path string, n int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// Read back, a file extended so is zeros, written or not.
	if err := f.Truncate(n); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// background leaves a child behind that holds stdout open, the way an agent
// that starts a server and exits does.
func background(d, dir string) error {
	dur, err := time.ParseDuration(d)
	if err != nil {
		return err
	}
	cmd := exec.Command("sleep", strconv.Itoa(int(dur.Seconds()+0.5)))
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "bg.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
}

func flood(n int64) {
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	line := strings.Repeat("flood ", 13) + "\n"
	for n > 0 {
		chunk := line
		if int64(len(chunk)) > n {
			chunk = chunk[:n]
		}
		if _, err := w.WriteString(chunk); err != nil {
			return
		}
		n -= int64(len(chunk))
	}
	w.Flush()
}

// raw prints n bytes: random ones, or one long line of x without a newline.
func raw(n int64, random bool) {
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	buf := make([]byte, 32<<10)
	for i := range buf {
		buf[i] = 'x'
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n > 0 {
		chunk := buf[:min(int64(len(buf)), n)]
		if random {
			for i := range chunk {
				chunk[i] = byte(r.Uint32())
			}
		}
		if _, err := w.Write(chunk); err != nil {
			return
		}
		n -= int64(len(chunk))
	}
	w.Flush()
}

// setStatus edits prd.json the way a cheating agent would: a generic JSON
// rewrite of one story's field.
func setStatus(args string) error {
	parts := strings.SplitN(args, " ", 3)
	if len(parts) != 3 {
		return fmt.Errorf("set-status: want ID KEY JSON")
	}
	data, err := os.ReadFile("prd.json")
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	var value any
	if err := json.Unmarshal([]byte(parts[2]), &value); err != nil {
		return err
	}
	stories, _ := doc["userStories"].([]any)
	for _, s := range stories {
		if m, ok := s.(map[string]any); ok && m["id"] == parts[0] {
			m[parts[1]] = value
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile("prd.json", append(out, '\n'), 0o644)
}

func claudeResult(text string) {
	events := []any{
		map[string]any{"type": "system", "subtype": "init", "session_id": "fake", "model": "fake-model"},
		map[string]any{"type": "assistant", "message": map[string]any{
			"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}},
		}},
		map[string]any{"type": "result", "subtype": "success", "is_error": false, "num_turns": 1,
			"result": text, "total_cost_usd": 0.01, "duration_ms": 10,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
		},
	}
	enc := json.NewEncoder(os.Stdout)
	for _, e := range events {
		enc.Encode(e)
	}
}

func die(err error) int {
	fmt.Fprintf(os.Stderr, "fakeagent: %v\n", err)
	return 99
}
