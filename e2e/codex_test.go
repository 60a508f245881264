package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/internal/fakemodel"
)

// codexConfig is Codex's config.toml for the tests: its API is the fake
// server's Responses API with a fake key, a model it knows (so that it
// asks for no model metadata), few retries of its own, and everything off
// that would reach out: plugins and their sync from GitHub, apps,
// connectors, browser and computer use, web search, the update check,
// analytics, feedback and OpenTelemetry.
const codexConfig = `model = "gpt-5.5"
model_provider = "fakemodel"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.fakemodel]
name = "fakemodel"
base_url = "%s/v1"
wire_api = "responses"
env_key = "CODEX_E2E_API_KEY"
request_max_retries = 2
stream_max_retries = 2

[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
browser_use = false
browser_use_external = false
computer_use = false
image_generation = false
goals = false
tool_suggest = false
skill_mcp_dependency_install = false
daemon_auto_start = false
in_app_updates = false
api_key_model_discovery = false
unbounded_connection_retries = false
shell_snapshot = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[agents]
enabled = false
`

// codexRequests is how many requests one codex run makes for a step whose
// every answer is a 429 before it gives up: the first, then
// stream_max_retries more.
const codexRequests = 1 + 2

// codexEnv is the isolated environment of codex: its CODEX_HOME (with the
// config above) inside the fresh HOME, and the fake key.
func codexEnv(t *testing.T, s *fakemodel.Server) []string {
	t.Helper()
	env := isolatedEnv(t, s, "CODEX_E2E_API_KEY=sk-fake-codex-e2e")
	codexHome := filepath.Join(envHome(env), ".codex")
	writeFilesIn(t, codexHome, map[string]string{"config.toml": fmt.Sprintf(codexConfig, s.URL)})
	return append(env, "CODEX_HOME="+codexHome)
}

// codexHarness is harness.toml for the codex preset with the installed
// binary. --strict-config makes codex refuse a config key it does not
// know, so that a setting above cannot silently stop switching something
// off.
func codexHarness(bin string) string {
	return presetHarness("codex", bin, `"--strict-config"`, "60s", "30s")
}

// codexGreeting is the conversation of greetingPRD's story for codex.
var codexGreeting = fakemodel.Conversation{
	Match: "codex-story-greeting",
	Steps: []fakemodel.Step{
		{Tool: fakemodel.Shell("exec_command", "echo hello > hello.txt")},
		{Text: "Wrote hello.txt.\nLearning: codex writes files with exec_command\n<ralph>done</ralph>"},
	},
}

// TestCodexLoop: ralph drives the real codex through two stories. Codex
// writes the files with its own tools (a shell command through
// exec_command, a new file through apply_patch), the checks pass only when
// the files are right, and the ledger holds each iteration's tokens.
func TestCodexLoop(t *testing.T) {
	bin := findCLI(t, "codex", "codex")
	if inNetns(t) {
		return
	}
	s := startServer(t,
		codexGreeting,
		fakemodel.Conversation{
			Match: "codex-story-farewell",
			Steps: []fakemodel.Step{
				{Tool: &fakemodel.ToolCall{Name: "apply_patch", Input: map[string]any{
					"input": "*** Begin Patch\n*** Add File: bye.txt\n+bye\n*** End Patch\n",
				}}},
				{Tool: fakemodel.Shell("exec_command", "ls > listing.txt")},
				{Text: "Wrote bye.txt with apply_patch.\n<ralph>done</ralph>"},
			},
		},
	)
	dir := writeProject(t, codexHarness(bin),
		storiesPRD("Codex e2e", "codex", `test "$(cat bye.txt)" = bye`, "test -f listing.txt"),
		"## Codebase Patterns\n")
	stdout, stderr := runLoop(t, dir, codexEnv(t, s), 0)
	// codex says on its stderr, in every run, that it reads its stdin for
	// more of the prompt, which ralph leaves empty: it is not shown.
	if out := stdout + stderr; strings.Contains(out, "Reading additional input from stdin") {
		t.Errorf("codex's line about its stdin was shown:\n%s", out)
	}
	wantStoriesDone(t, dir, stdout,
		// The view shows codex's actions, not its JSON.
		[]string{"→ shell: echo hello > hello.txt", "→ edit: add ", "✓ turn completed: "},
		[]string{
			// Two requests (the tool call, then the final text) of 100 input
			// and 20 output tokens each.
			"usage: 200 input tokens · 40 output tokens",
			"learning: codex writes files with exec_command",
			"usage: 300 input tokens · 60 output tokens",
			"totals: iterations 2 · tokens 600",
		})
}

// TestCodexDashPrompt: a prompt that starts with "-" reaches codex as its
// prompt (see wantListPrompt).
func TestCodexDashPrompt(t *testing.T) {
	bin := findCLI(t, "codex", "codex")
	if inNetns(t) {
		return
	}
	s := startServer(t, codexGreeting)
	wantListPrompt(t, codexHarness(bin), "codex", codexEnv(t, s))
}

// TestCodexRateLimit: every answer codex gets in its first run is a 429,
// until its own retries give up and it reports the rate limit; ralph waits
// (retry_backoff) and runs the iteration again, which is not an attempt,
// and the second run succeeds.
func TestCodexRateLimit(t *testing.T) {
	bin := findCLI(t, "codex", "codex")
	if inNetns(t) {
		return
	}
	conv := codexGreeting
	conv.Faults = map[int][]fakemodel.Fault{0: repeatFault(fakemodel.Fault{Status: 429}, codexRequests)}
	s := startServer(t, conv)
	dir := writeProject(t, codexHarness(bin), greetingPRD("Codex e2e", "codex"), "## Codebase Patterns\n")
	_, stderr := runLoop(t, dir, codexEnv(t, s), 0)
	wantServed(t, s, 429, codexRequests)
	wantRateLimitedThenDone(t, dir, stderr,
		"429 Too Many Requests",
		"usage: 200 input tokens · 40 output tokens",
	)
}
