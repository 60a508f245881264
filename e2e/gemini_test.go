package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/internal/fakemodel"
)

// geminiSettings is the Gemini CLI's ~/.gemini/settings.json for the tests:
// API-key auth chosen up front (so that it asks for no login), and
// everything off that would reach out or wait for a person: usage
// statistics, telemetry, the update check and auto-update, the IDE
// integration and its nudge. %s adds settings of a test's own.
const geminiSettings = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false, "logPrompts": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false%s},
  "ide": {"enabled": false, "hasSeenNudge": true}%s
}
`

// geminiEnv is the isolated environment of gemini: a fresh HOME holding the
// settings above (general and top are extra settings, each starting with a
// comma, or empty), the fake key, the API's base URL pointed at the fake
// server, telemetry off once more (the variable wins over settings), and no
// browser to open for a login.
func geminiEnv(t *testing.T, s *fakemodel.Server, general, top string) []string {
	t.Helper()
	env := isolatedEnv(t, s,
		"GEMINI_API_KEY=fake-gemini-e2e-key",
		"GOOGLE_GEMINI_BASE_URL="+s.URL,
		"GEMINI_TELEMETRY_ENABLED=false",
		"NO_BROWSER=true",
	)
	writeFilesIn(t, envHome(env), map[string]string{".gemini/settings.json": fmt.Sprintf(geminiSettings, general, top)})
	return env
}

// geminiHarness is harness.toml for the gemini preset with the installed
// binary and the given agent.args.
func geminiHarness(bin, args string) string {
	return presetHarness("gemini", bin, args, "90s", "60s")
}

var (
	geminiGreeting = fakemodel.Conversation{
		Match: "gemini-story-greeting",
		Steps: []fakemodel.Step{
			{Tool: fakemodel.Shell("run_shell_command", "echo hello > hello.txt")},
			{Text: "Wrote hello.txt with the shell.\nLearning: gemini writes files with run_shell_command\n<ralph>done</ralph>"},
		},
	}
	geminiFarewell = fakemodel.Conversation{
		Match: "gemini-story-farewell",
		Steps: []fakemodel.Step{
			{Tool: &fakemodel.ToolCall{Name: "write_file", Input: map[string]any{
				"file_path": "bye.txt", "content": "bye\n",
			}}},
			{Text: "Wrote bye.txt with write_file.\n<ralph>done</ralph>"},
		},
	}
)

// usageRE reads a ledger entry's usage line.
var usageRE = regexp.MustCompile(`(?m)^usage: (\d+) input tokens · (\d+) output tokens`)

// TestGeminiLoop: ralph drives the real gemini through two stories. Gemini
// writes the files with its own tools (run_shell_command, write_file), the
// checks pass only when the files are right, and the ledger holds each
// iteration's tokens. The model is gemini's default ("auto"), so each run
// also routes its prompt with a side call, which the fake server answers
// outside the conversation.
func TestGeminiLoop(t *testing.T) {
	bin := findCLI(t, "gemini", "gemini")
	if inNetns(t) {
		return
	}
	s := startServer(t, geminiGreeting, geminiFarewell)
	dir := writeProject(t, geminiHarness(bin, ""),
		storiesPRD("Gemini e2e", "gemini", `test "$(cat bye.txt)" = bye`),
		"## Codebase Patterns\n")
	stdout, _ := runLoop(t, dir, geminiEnv(t, s, "", ""), 0)
	progress := wantStoriesDone(t, dir, stdout,
		// The view shows gemini's actions, not its JSON.
		[]string{"→ run_shell_command: echo hello > hello.txt", "→ write_file: bye.txt", "✓ result: 1 tool call"},
		[]string{"learning: gemini writes files with run_shell_command"})
	// Each run makes two requests of the conversation (the tool call, then
	// the final text), and maybe side calls, of 100 input and 20 output
	// tokens each.
	usage := usageRE.FindAllStringSubmatch(progress, -1)
	if len(usage) != 2 {
		t.Errorf("progress.txt has %d usage lines, want one per iteration (2):\n%s", len(usage), progress)
	}
	for _, u := range usage {
		in, _ := strconv.Atoi(u[1])
		out, _ := strconv.Atoi(u[2])
		if in < 2*fakemodel.Usage.Input || out < 2*fakemodel.Usage.Output || in*fakemodel.Usage.Output != out*fakemodel.Usage.Input {
			t.Errorf("usage %q: want a whole number (2 or more) of requests of %d input and %d output tokens", u[0], fakemodel.Usage.Input, fakemodel.Usage.Output)
		}
	}
}

// TestGeminiDashPrompt: a prompt that starts with "-" reaches gemini as its
// prompt (see wantListPrompt).
func TestGeminiDashPrompt(t *testing.T) {
	bin := findCLI(t, "gemini", "gemini")
	if inNetns(t) {
		return
	}
	s := startServer(t, geminiGreeting)
	wantListPrompt(t, geminiHarness(bin, ""), "gemini", geminiEnv(t, s, "", ""))
}

// TestGeminiRateLimit: gemini's first request of the story gets a 429 for
// an exhausted daily quota, which gemini does not retry: it reports the
// error and exits with the status (429 mod 256). ralph waits
// (retry_backoff) and runs the iteration again, which is not an attempt,
// and the second run succeeds. The model is chosen with agent.args, which
// also shows that they reach gemini ahead of the prompt.
func TestGeminiRateLimit(t *testing.T) {
	bin := findCLI(t, "gemini", "gemini")
	if inNetns(t) {
		return
	}
	conv := geminiGreeting
	conv.Faults = map[int][]fakemodel.Fault{0: {{Status: 429}}}
	s := startServer(t, conv)
	dir := writeProject(t, geminiHarness(bin, `"--model", "gemini-2.5-flash"`), greetingPRD("Gemini e2e", "gemini"), "## Codebase Patterns\n")
	_, stderr := runLoop(t, dir, geminiEnv(t, s, "", ""), 0)
	wantServed(t, s, 429, 1)
	if log := strings.Join(s.Log(), "\n"); !strings.Contains(log, "/models/gemini-2.5-flash:streamGenerateContent") {
		t.Errorf("gemini did not use the model of agent.args:\n%s", log)
	}
	wantRateLimitedThenDone(t, dir, stderr,
		"rate limit: API error: You have exhausted your daily quota on this model.",
		"usage: 200 input tokens · 40 output tokens",
	)
}

// TestGeminiCapture records what the real gemini prints in the cases the
// unit tests of its reader replay (agent/testdata/gemini): run with
// RALPH_GEMINI_CAPTURE=<dir> to write <case>.jsonl (stdout) and
// <case>.exit (the exit status) there.
func TestGeminiCapture(t *testing.T) {
	out := os.Getenv("RALPH_GEMINI_CAPTURE")
	if out == "" {
		t.Skip("set RALPH_GEMINI_CAPTURE=<dir> to capture gemini's stream-json")
	}
	bin := findCLI(t, "gemini", "gemini")
	out, err := filepath.Abs(out)
	if err != nil {
		t.Fatal(err)
	}
	// Without a model of its own, a retried 429 or 500 is tried up to ten
	// times with waits of 5s and more: one attempt is enough here.
	oneTry := `, "maxAttempts": 1`
	pinned := `, "model": {"name": "gemini-2.5-flash"}`
	cases := []struct {
		name, general, top string
		conv               fakemodel.Conversation
	}{
		{name: "tools", conv: fakemodel.Conversation{Steps: []fakemodel.Step{
			{Tool: fakemodel.Shell("run_shell_command", "echo hello > hello.txt && cat hello.txt")},
			{Tool: &fakemodel.ToolCall{Name: "write_file", Input: map[string]any{"file_path": "bye.txt", "content": "bye\n"}}},
			{Text: "Wrote hello.txt and bye.txt.\nLearning: both tools work\n<ralph>done</ralph>"},
		}}},
		{name: "tool-error", conv: fakemodel.Conversation{Steps: []fakemodel.Step{
			{Tool: &fakemodel.ToolCall{Name: "read_file", Input: map[string]any{"file_path": "missing.txt"}}},
			{Text: "The file is missing, so there is nothing to do yet."},
		}}},
		{name: "daily-quota", conv: fakemodel.Conversation{
			Steps:  []fakemodel.Step{{Text: "unreachable"}},
			Faults: map[int][]fakemodel.Fault{0: {{Status: 429}}},
		}},
		{name: "retry-429", general: oneTry, top: pinned, conv: fakemodel.Conversation{
			Steps: []fakemodel.Step{{Text: "unreachable"}},
			Faults: map[int][]fakemodel.Fault{0: {{Status: 429, Body: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED",` +
				`"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`}}},
		}},
		{name: "server-error", general: oneTry, top: pinned, conv: fakemodel.Conversation{
			Steps:  []fakemodel.Step{{Text: "unreachable"}},
			Faults: map[int][]fakemodel.Fault{0: {{Status: 500}}},
		}},
		{name: "bad-key", general: oneTry, top: pinned, conv: fakemodel.Conversation{
			Steps: []fakemodel.Step{{Text: "unreachable"}},
			Faults: map[int][]fakemodel.Fault{0: {{Status: 400, Body: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",` +
				`"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`}}},
		}},
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.conv.Match = "gemini-capture-" + c.name
			s := startServer(t, c.conv)
			dir := t.TempDir()
			cmd := exec.Command(bin, "--yolo", "--skip-trust", "-o", "stream-json", "Do the task gemini-capture-"+c.name+".")
			cmd.Dir = dir
			cmd.Env = geminiEnv(t, s, c.general, c.top)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			t.Logf("exit %d\nstderr:\n%s", code, stderr.String())
			if err := os.WriteFile(filepath.Join(out, c.name+".jsonl"), stdout.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, c.name+".exit"), []byte(strconv.Itoa(code)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}
