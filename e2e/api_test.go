package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/internal/fakemodel"
)

// ralph's built-in API agent (agent.api) needs no CLI: these tests run
// always. ralph starts itself as `ralph api-agent`, which talks to the
// fake model server on 127.0.0.1, runs the model's tool calls in the work
// directory and prints stream-json for the loop to read.

// apiBase is each API's base_url on the fake server, written the way the
// providers' SDKs take it.
var apiBase = map[string]func(url string) string{
	"anthropic": func(url string) string { return url },
	"openai":    func(url string) string { return url + "/v1" },
}

// apiHarness is harness.toml for the API agent against the fake server.
func apiHarness(api, baseURL, extra string) string {
	return fmt.Sprintf(`[agent]
api = %q
model = "fake-model"
base_url = %q
api_key_env = "RALPH_E2E_KEY"
timeout = "60s"
idle_timeout = "30s"
retry_backoff = "1s"
price_input_per_mtok = 3
price_output_per_mtok = 15
%s
`, api, baseURL, extra) + greetCheck
}

// greetCheck is the end of the API tests' harness.toml: the check of
// US-001, and no commits.
const greetCheck = `[[checks]]
name = "greet"
run = "test \"$(sh greet.sh)\" = \"hello, world\""
timeout = "10s"

[git]
commit = false
`

const apiPRD = `{
  "project": "API e2e",
  "userStories": [
    {
      "id": "US-001",
      "title": "Greeter",
      "description": "Write greet.sh, which greets the world (api-story-greet).",
      "priority": 1,
      "passes": false
    }
  ]
}
`

// apiGreeter is the model's side of US-001: it writes a script, tries to
// write outside the project (refused), fixes the script with an edit, runs
// it, and claims done.
var apiGreeter = fakemodel.Conversation{
	Match: "api-story-greet",
	Steps: []fakemodel.Step{
		{Text: "I'll write the script.", Tool: &fakemodel.ToolCall{Name: "write_file", Input: map[string]any{
			"path": "greet.sh", "content": "#!/bin/sh\necho \"hello, $1\"\n"}}},
		{Tool: &fakemodel.ToolCall{Name: "write_file", Input: map[string]any{"path": "../escape.txt", "content": "out"}}},
		{Tool: &fakemodel.ToolCall{Name: "edit_file", Input: map[string]any{
			"path": "greet.sh", "old_string": "$1", "new_string": "${1:-world}"}}},
		{Tool: fakemodel.Shell("shell", "sh greet.sh")},
		{Text: "Wrote greet.sh.\nLearning: greet.sh greets the world by default\n<ralph>done</ralph>"},
	},
}

// forEachAPI runs test as a subtest for each API the agent speaks.
func forEachAPI(t *testing.T, test func(t *testing.T, api string)) {
	for _, api := range []string{"anthropic", "openai"} {
		t.Run(api, func(t *testing.T) { test(t, api) })
	}
}

// TestAPILoop: a whole `ralph loop` with the built-in agent, for each API:
// the model writes code through the tools, the attempt to leave the
// project is refused, the check passes, and the ledger holds the summed
// tokens and the cost at the configured prices.
func TestAPILoop(t *testing.T) {
	forEachAPI(t, func(t *testing.T, api string) {
		s := startServer(t, apiGreeter)
		dir := writeProject(t, apiHarness(api, apiBase[api](s.URL), ""), apiPRD, "## Codebase Patterns\n")
		stdout, _ := runLoop(t, dir, isolatedEnv(t, s, "RALPH_E2E_KEY=sk-fake-e2e"), 0)
		wantFile(t, dir, "greet.sh", "#!/bin/sh\necho \"hello, ${1:-world}\"\n")
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.txt")); err == nil {
			t.Errorf("the model wrote outside the project")
		}
		wantView(t, stdout,
			"● session started: fake-model\n",
			"I'll write the script.\n",
			"→ write_file: greet.sh\n",
			"→ write_file: ../escape.txt\n",
			"  ✗ error: ../escape.txt: outside the project directory",
			"→ edit_file: greet.sh\n",
			"→ shell: sh greet.sh\n",
			"✓ result: 5 turns, $0.0030\n",
			"[ralph] US-001 → done",
		)
		wantContains(t, "progress.txt", readFile(t, filepath.Join(dir, "progress.txt")),
			"=== ralph iteration 1 · US-001 · done ===",
			"agent: exit 0 after ",
			// Five requests of 100 input and 20 output tokens, at $3
			// and $15 per million.
			"usage: 500 input tokens · 100 output tokens · $0.0030",
			"check: greet · pass",
			"learning: greet.sh greets the world by default",
		)
		if prd := readFile(t, filepath.Join(dir, "prd.json")); !strings.Contains(prd, `"passes": true`) {
			t.Errorf("prd.json: the story does not pass:\n%s", prd)
		}
	})
}

// TestAPIRateLimit: a 429 that lifts within a second is waited out by the
// agent itself; one that lifts in an hour ends the run with the reset
// time, and the loop, which may not run that long, stops instead of
// waiting (exit 3), without counting an attempt.
func TestAPIRateLimit(t *testing.T) {
	forEachAPI(t, func(t *testing.T, api string) {
		conv := apiGreeter
		conv.Faults = map[int][]fakemodel.Fault{
			0: {{Status: 429, Headers: map[string]string{"retry-after": "1"}}},
			3: {{Status: 429, Headers: map[string]string{"retry-after": "3600"}}},
		}
		s := startServer(t, conv)
		dir := writeProject(t, apiHarness(api, apiBase[api](s.URL), "\n[loop]\nmax_duration = \"10m\"\n"), apiPRD, "")
		stdout, stderr := runLoop(t, dir, isolatedEnv(t, s, "RALPH_E2E_KEY=sk-fake-e2e"), 3)
		wantContains(t, "stdout", stdout, "✗ API error 429 rate_limit_error: retrying (1 of 3) in 1s", "✗ result (error_during_execution): 3 turns")
		if !strings.Contains(stderr, "ralph: stopped: the rate limit lifts only after loop.max_duration = 10m0s") {
			t.Errorf("stderr:\n%s", stderr)
		}
		progress := readFile(t, filepath.Join(dir, "progress.txt"))
		if !strings.Contains(progress, "· rate-limited ===") || !strings.Contains(progress, "rate limit: API error 429 (rate_limit_error)") {
			t.Errorf("progress.txt:\n%s", progress)
		}
		if prd := readFile(t, filepath.Join(dir, "prd.json")); strings.Contains(prd, `"attempts"`) {
			t.Errorf("a rate limit counted as an attempt:\n%s", prd)
		}
	})
}

// TestAPIBadKey: a key the API refuses stops the loop at once (exit 1),
// naming the variable the key came from.
func TestAPIBadKey(t *testing.T) {
	forEachAPI(t, func(t *testing.T, api string) {
		conv := apiGreeter
		// The API quotes the key back, as OpenAI's does: a variable whose
		// name says nothing of a secret (api_key_env) is redacted too.
		body := map[string]string{
			"anthropic": `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: sk-wrong-0123456789abcdef"}}`,
			"openai":    `{"error":{"message":"Incorrect API key provided: sk-wrong-0123456789abcdef.","type":"invalid_request_error","code":"invalid_api_key"}}`,
		}[api]
		conv.Faults = map[int][]fakemodel.Fault{0: {{Status: 401, Body: body}}}
		s := startServer(t, conv)
		harness := strings.Replace(apiHarness(api, apiBase[api](s.URL), ""), "RALPH_E2E_KEY", "LLM_GATEWAY", 1)
		dir := writeProject(t, harness, apiPRD, "")
		_, stderr := runLoop(t, dir, isolatedEnv(t, s, "LLM_GATEWAY=sk-wrong-0123456789abcdef"), 1)
		if ledger, err := os.ReadFile(filepath.Join(dir, "progress.txt")); err != nil || strings.Contains(string(ledger), "sk-wrong") {
			t.Errorf("the key is in the ledger (%v):\n%s", err, ledger)
		}
		want := "ralph: error: the agent reported a permanent error: API error 401 (authentication_error): "
		if !strings.Contains(stderr, want) || !strings.Contains(stderr, "check the key in LLM_GATEWAY (agent.api_key_env)") {
			t.Errorf("stderr lacks %q and the hint:\n%s", want, stderr)
		}
		// The agent's own output is shown as it printed it; ralph's lines
		// never quote the key.
		if strings.Contains(stderr, "sk-wrong") {
			t.Errorf("the key was printed:\n%s", stderr)
		}
	})
}

// TestAPIBadRequest: a request the API will never take (a max_tokens above
// the model's) stops the loop at once (exit 1), counting no attempt: asked
// again, it would be refused again, for every story.
func TestAPIBadRequest(t *testing.T) {
	forEachAPI(t, func(t *testing.T, api string) {
		conv := apiGreeter
		msg := "max_tokens: 8192 > 4096, which is the maximum allowed number of output tokens for test-model"
		body := map[string]string{
			"anthropic": `{"type":"error","error":{"type":"invalid_request_error","message":"` + msg + `"}}`,
			"openai":    `{"error":{"message":"` + msg + `","type":"invalid_request_error","code":null}}`,
		}[api]
		conv.Faults = map[int][]fakemodel.Fault{0: {{Status: 400, Body: body}}}
		s := startServer(t, conv)
		dir := writeProject(t, apiHarness(api, apiBase[api](s.URL), ""), apiPRD, "")
		_, stderr := runLoop(t, dir, isolatedEnv(t, s, "RALPH_E2E_KEY=sk-fake-e2e"), 1)
		if want := "ralph: error: the agent reported a permanent error: API error 400 (invalid_request_error): " + msg; !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
		if prd := readFile(t, filepath.Join(dir, "prd.json")); strings.Contains(prd, `"attempts"`) || strings.Contains(prd, `"failed"`) {
			t.Errorf("the refused request counted against the story:\n%s", prd)
		}
	})
}

// fakeClaude prints what Claude Code prints for one turn that claims done,
// after doing the work: the claude preset reads it as it reads the API
// agent's output.
const fakeClaude = `#!/bin/sh
cat >/dev/null
printf '#!/bin/sh\necho "hello, ${1:-world}"\n' >greet.sh
cat <<'END'
{"type":"system","subtype":"init","session_id":"fake","model":"fake-model"}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Wrote greet.sh.\nLearning: greet.sh greets the world by default\n<ralph>done</ralph>"}]}}
{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Wrote greet.sh.\nLearning: greet.sh greets the world by default\n<ralph>done</ralph>","total_cost_usd":0.01,"usage":{"input_tokens":100,"output_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}
END
`

// cliHarness is apiHarness's twin for the claude preset.
const cliHarness = `[agent]
preset = "claude"
command = ["./fake-claude"]
timeout = "60s"
idle_timeout = "30s"

` + greetCheck

// TestAPILedgerShape: the API agent and a CLI preset leave ledger entries
// of the same shape: the same keys in the same order.
func TestAPILedgerShape(t *testing.T) {
	s := startServer(t, apiGreeter)
	apiDir := writeProject(t, apiHarness("anthropic", s.URL, ""), apiPRD, "")
	cliDir := writeFiles(t, map[string]string{
		"harness.toml": cliHarness,
		"prd.json":     apiPRD,
		"progress.txt": "",
		"fake-claude":  fakeClaude,
	})
	if err := os.Chmod(filepath.Join(cliDir, "fake-claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := isolatedEnv(t, s, "RALPH_E2E_KEY=sk-fake-e2e")
	var shapes [][]string
	for _, dir := range []string{apiDir, cliDir} {
		stdout, stderr, code := runRalph(t, dir, env, "loop")
		if code != 0 {
			t.Fatalf("ralph loop in %s exited %d\nstdout:\n%s\nstderr:\n%s", dir, code, stdout, stderr)
		}
		shapes = append(shapes, ledgerKeys(readFile(t, filepath.Join(dir, "progress.txt"))))
	}
	if !slices.Equal(shapes[0], shapes[1]) {
		t.Errorf("ledger keys differ:\napi agent: %q\nclaude:    %q", shapes[0], shapes[1])
	}
	for _, k := range []string{"agent", "usage", "check", "summary", "learning", "totals"} {
		if !slices.Contains(shapes[0], k) {
			t.Errorf("ledger keys %q lack %q", shapes[0], k)
		}
	}
}

// ledgerKeys lists the keys of a ledger's entries in order, with the
// markers that open and close each entry.
func ledgerKeys(progress string) []string {
	var keys []string
	for _, line := range strings.Split(progress, "\n") {
		switch {
		case strings.HasPrefix(line, "=== ralph iteration "):
			keys = append(keys, "begin")
		case strings.HasPrefix(line, "=== end of iteration"):
			keys = append(keys, "end")
		case line == "", strings.HasPrefix(line, " "):
		default:
			if k, _, ok := strings.Cut(line, ":"); ok {
				keys = append(keys, k)
			}
		}
	}
	return keys
}
