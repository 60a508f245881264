package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/internal/fakemodel"
)

// opencodeVersion is the version of opencode-ai in .ci/agents; the plugin
// package it installs into its config directory has the same version.
const opencodeVersion = "1.18.33"

// opencodeEnv is the environment of opencode under test: isolatedEnv, plus
// a config directory of its own that points opencode at the fake server
// through the AI SDK's OpenAI-compatible provider, and everything turned off
// that would reach the internet.
//
// opencode reaches out at start in two ways that the proxy guard catches:
// it fetches the model catalogue from models.dev (OPENCODE_DISABLE_MODELS_FETCH
// stops that), and it installs @opencode-ai/plugin into each config directory
// in the background from the npm registry. It skips that install when the
// directory already has node_modules and a package-lock.json that lists the
// package, so the config directory is seeded with both. The provider
// package (@ai-sdk/openai-compatible) is bundled in the binary and is not
// downloaded.
func opencodeEnv(t testing.TB, s *fakemodel.Server) []string {
	t.Helper()
	cfgHome := t.TempDir()
	dir := filepath.Join(cfgHome, "opencode")
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{
			"fake": map[string]any{
				"npm":  "@ai-sdk/openai-compatible",
				"name": "Fake",
				"options": map[string]any{
					"baseURL": s.URL + "/v1",
					"apiKey":  "sk-fake-e2e",
				},
				"models": map[string]any{
					"fake-model": map[string]any{
						"name": "Fake Model",
						// Dollars per million tokens, so that the reported
						// cost is not zero: 100 input and 20 output tokens a
						// step make $0.0006.
						"cost":  map[string]any{"input": 3, "output": 15},
						"limit": map[string]any{"context": 200000, "output": 8192},
					},
				},
			},
		},
		"model":       "fake/fake-model",
		"small_model": "fake/fake-model",
		"autoupdate":  false,
		"share":       "disabled",
	}
	deps := map[string]any{"@opencode-ai/plugin": opencodeVersion}
	for name, v := range map[string]any{
		"opencode.json":     config,
		"package.json":      map[string]any{"dependencies": deps},
		"package-lock.json": map[string]any{"lockfileVersion": 3, "packages": map[string]any{"": map[string]any{"dependencies": deps}}},
	} {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return isolatedEnv(t, s,
		"XDG_CONFIG_HOME="+cfgHome,
		"OPENCODE_DISABLE_MODELS_FETCH=true",
		"OPENCODE_DISABLE_AUTOUPDATE=true",
		"OPENCODE_DISABLE_SHARE=true",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=true",
		"OPENCODE_DISABLE_CLAUDE_CODE=true",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=true",
	)
}

// opencodeHarness is a harness.toml driving the installed opencode, with
// one check.
func opencodeHarness(bin, check string) string {
	q, _ := json.Marshal(bin) // a JSON string is a TOML basic string
	c, _ := json.Marshal(check)
	return `[agent]
preset = "opencode"
command = [` + string(q) + `]
timeout = "60s"
idle_timeout = "45s"
retry_backoff = "1s"

[loop]
max_iterations = 6
max_attempts = 2

[[checks]]
name = "content"
run = ` + string(c) + `
timeout = "30s"
`
}

// opencodeTask is the Match of a story's conversation: its heading in the
// prompt, which earlier iterations' ledger entries never repeat.
func opencodeTask(id string) string { return "# Your task: " + id }

func TestOpenCodeLoop(t *testing.T) {
	bin := findCLI(t, "opencode", "opencode")
	if inNetns(t) {
		return
	}
	dir := writeProject(t, opencodeHarness(bin, "grep -qx 'hello from opencode' hello.txt"), `{
  "project": "Greeter",
  "userStories": [
    {"id": "US-001", "title": "Say hello", "description": "Write hello.txt with a greeting.", "acceptanceCriteria": ["hello.txt says hello from opencode"], "priority": 1, "passes": false, "notes": ""},
    {"id": "US-002", "title": "Take notes", "description": "Write notes/today.md.", "acceptanceCriteria": ["notes/today.md holds the note"], "priority": 2, "passes": false, "notes": "",
     "checks": ["grep -qx 'note: written by the write tool' notes/today.md"]}
  ]
}
`, "## Codebase Patterns\n")

	s := startServer(t,
		fakemodel.Conversation{
			Match: opencodeTask("US-001"),
			Steps: []fakemodel.Step{
				{Tool: &fakemodel.ToolCall{Name: "bash", Input: map[string]any{
					"command": "echo 'hello from opencode' > hello.txt", "description": "Write the greeting"}}},
				{Text: "I wrote hello.txt with the greeting.\nLearning: greetings live in hello.txt\n<ralph>done</ralph>"},
			},
		},
		fakemodel.Conversation{
			Match: opencodeTask("US-002"),
			Steps: []fakemodel.Step{
				{Text: "Writing the note.", Tool: &fakemodel.ToolCall{Name: "write", Input: map[string]any{
					"filePath": filepath.Join(dir, "notes", "today.md"), "content": "note: written by the write tool\n"}}},
				{Text: "The note is in notes/today.md.\n<ralph>done</ralph>"},
			},
		},
	)
	stdout, _ := runLoop(t, dir, opencodeEnv(t, s), 0)
	wantFile(t, dir, "hello.txt", "hello from opencode\n")
	wantFile(t, dir, filepath.Join("notes", "today.md"), "note: written by the write tool\n")
	// The reader's view: tool calls on one line each, the final text.
	wantContains(t, "stdout", stdout, "→ bash: echo 'hello from opencode' > hello.txt", "→ write: "+filepath.Join(dir, "notes", "today.md"), "<ralph>done</ralph>")

	progress := readFile(t, filepath.Join(dir, "progress.txt"))
	for _, id := range []string{"US-001", "US-002"} {
		if !regexp.MustCompile(`=== ralph iteration \d+ · ` + id + ` · done ===`).MatchString(progress) {
			t.Errorf("progress.txt has no done entry for %s:\n%s", id, progress)
		}
	}
	// Two steps of 100 input and 20 output tokens in each iteration, at $3
	// and $15 per million.
	usage := regexp.MustCompile(`(?m)^usage: (.*)$`).FindAllStringSubmatch(progress, -1)
	if len(usage) != 2 {
		t.Fatalf("progress.txt has %d usage lines, want 2:\n%s", len(usage), progress)
	}
	for _, u := range usage {
		if u[1] != "200 input tokens · 40 output tokens · $0.0012" {
			t.Errorf("usage line %q, want 200 input and 40 output tokens, $0.0012", u[1])
		}
	}
	wantContains(t, "progress.txt", progress, "learning: greetings live in hello.txt")
	var prd struct {
		UserStories []struct {
			ID     string `json:"id"`
			Passes bool   `json:"passes"`
		} `json:"userStories"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "prd.json"))), &prd); err != nil {
		t.Fatal(err)
	}
	for _, st := range prd.UserStories {
		if !st.Passes {
			t.Errorf("story %s does not pass", st.ID)
		}
	}
}

// opencodeRetries is how many times opencode sends a request that fails
// with a retryable error before it gives up on the session: once, and five
// retries (RETRY_MAX_RETRIES in its session/retry), each after the
// retry-after the server sent.
const opencodeRetries = 6

func TestOpenCodeRateLimit(t *testing.T) {
	bin := findCLI(t, "opencode", "opencode")
	if inNetns(t) {
		return
	}
	dir := writeProject(t, opencodeHarness(bin, "grep -qx hello hello.txt"), `{
  "project": "Limited",
  "userStories": [
    {"id": "US-001", "title": "Say hello", "description": "Write hello.txt.", "priority": 1, "passes": false}
  ]
}
`, "")

	s := startServer(t, fakemodel.Conversation{
		Match: opencodeTask("US-001"),
		Steps: []fakemodel.Step{
			{Tool: fakemodel.Shell("bash", "echo hello > hello.txt")},
			{Text: "Done.\n<ralph>done</ralph>"},
		},
		Faults: map[int][]fakemodel.Fault{0: repeatFault(fakemodel.Fault{Status: 429, Headers: map[string]string{"retry-after": "1"}}, opencodeRetries)},
	})
	runLoop(t, dir, opencodeEnv(t, s), 0)
	wantServed(t, s, 429, opencodeRetries)
	progress := readFile(t, filepath.Join(dir, "progress.txt"))
	// opencode gave up after its own retries; ralph waited and ran the
	// iteration again, without counting an attempt.
	wantContains(t, "progress.txt", progress,
		"=== ralph iteration 1 · US-001 · rate-limited ===",
		"=== ralph iteration 2 · US-001 · done ===",
	)
	if !strings.Contains(progress, "attempt: 1\n") || strings.Contains(progress, "attempt: 2\n") {
		t.Errorf("the rate-limited iteration counted as an attempt:\n%s", progress)
	}
	wantFile(t, dir, "hello.txt", "hello\n")
}

// TestOpenCodeCapture records opencode's own JSON output against the fake
// server into the directory named by RALPH_OPENCODE_CAPTURE (the reader's
// test transcripts live in agent/testdata/opencode):
//
//	RALPH_OPENCODE_CAPTURE=$PWD/agent/testdata/opencode go test ./e2e -run TestOpenCodeCapture
func TestOpenCodeCapture(t *testing.T) {
	out := os.Getenv("RALPH_OPENCODE_CAPTURE")
	if out == "" {
		t.Skip("set RALPH_OPENCODE_CAPTURE to a directory to record opencode transcripts")
	}
	bin := findCLI(t, "opencode", "opencode")
	retryable := func(f fakemodel.Fault) []fakemodel.Fault { return repeatFault(f, opencodeRetries) }
	for _, tc := range []struct {
		name   string
		steps  func(dir string) []fakemodel.Step
		faults map[int][]fakemodel.Fault
		title  []fakemodel.Fault // faults of the title request
	}{
		{
			name: "tools",
			steps: func(dir string) []fakemodel.Step {
				return []fakemodel.Step{
					{Text: "Let me look first.", Tool: &fakemodel.ToolCall{Name: "bash", Input: map[string]any{"command": "ls -a && echo hi > a.txt", "description": "List and write"}}},
					{Tool: &fakemodel.ToolCall{Name: "read", Input: map[string]any{"filePath": filepath.Join(dir, "missing.txt")}}},
					{Tool: &fakemodel.ToolCall{Name: "write", Input: map[string]any{"filePath": filepath.Join(dir, "b.txt"), "content": "bee\n"}}},
					{Text: "Wrote a.txt and b.txt.\nLearning: a.txt is scratch\n<ralph>done</ralph>"},
				}
			},
		},
		{
			name:   "ratelimit",
			steps:  func(string) []fakemodel.Step { return []fakemodel.Step{{Text: "never"}} },
			faults: map[int][]fakemodel.Fault{0: retryable(fakemodel.Fault{Status: 429, Headers: map[string]string{"retry-after": "1"}})},
		},
		{
			name:   "server-error",
			steps:  func(string) []fakemodel.Step { return []fakemodel.Step{{Text: "never"}} },
			faults: map[int][]fakemodel.Fault{0: retryable(fakemodel.Fault{Status: 500, Headers: map[string]string{"retry-after": "0"}})},
		},
		{
			name:  "title-fails",
			steps: func(string) []fakemodel.Step { return []fakemodel.Step{{Text: "Nothing to do.\n<ralph>done</ralph>"}} },
			title: []fakemodel.Fault{{Status: 401}, {Status: 401}, {Status: 401}},
		},
		{
			name:   "bad-key",
			steps:  func(string) []fakemodel.Step { return []fakemodel.Step{{Text: "never"}} },
			faults: map[int][]fakemodel.Fault{0: {{Status: 401}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := startServer(t,
				fakemodel.Conversation{Match: "CAPTURE", Steps: tc.steps(dir), Faults: tc.faults},
				fakemodel.Conversation{Match: "Generate a title", Steps: []fakemodel.Step{{Text: "Capture"}}, Faults: map[int][]fakemodel.Fault{0: tc.title}})
			cmd := exec.Command(bin, "run", "--format", "json", "--auto")
			cmd.Dir = dir
			cmd.Env = opencodeEnv(t, s)
			cmd.Stdin = strings.NewReader("CAPTURE: do the work.\n")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdout, err := cmd.Output()
			t.Logf("opencode: %v\nstderr:\n%s\nserver:\n%s", err, stderr.String(), strings.Join(s.Log(), "\n"))
			if err := os.WriteFile(filepath.Join(out, tc.name+".jsonl"), stdout, 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}
