package e2e

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ralph-harness/ralph/internal/fakemodel"
)

// claudeMaxRetries is how often Claude Code retries a failed API request
// itself in these tests (CLAUDE_CODE_MAX_RETRIES; its default is 10), so
// that a test of a rate limit it gives up on stays short.
const claudeMaxRetries = 2

// claudeEnv is the isolated environment of Claude Code: its API is the
// fake server's Messages API with a fake key, and everything is off that
// would reach out or wait for a person: telemetry, error reports, the
// auto-updater and the install checks, feedback surveys, the bug command,
// IDE detection and extension installs, the plugin marketplace.
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC covers most of them; the others
// say so one by one in case a version stops tying them together.
//
// IS_SANDBOX=1 is Claude Code's own switch for running
// --dangerously-skip-permissions as root, which it otherwise refuses
// ("cannot be used with root/sudo privileges"): the tests may run as root
// in a container.
func claudeEnv(t *testing.T, s *fakemodel.Server) []string {
	t.Helper()
	return isolatedEnv(t, s,
		"ANTHROPIC_BASE_URL="+s.URL,
		"ANTHROPIC_API_KEY=sk-ant-fake-ralph-e2e",
		"IS_SANDBOX=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_INSTALLATION_CHECKS=1",
		"DISABLE_BUG_COMMAND=1",
		"CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1",
		"CLAUDE_CODE_AUTO_CONNECT_IDE=false",
		"CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL=1",
		"CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1",
		fmt.Sprintf("CLAUDE_CODE_MAX_RETRIES=%d", claudeMaxRetries),
	)
}

// claudeHarness is harness.toml for the claude preset with the installed
// binary.
func claudeHarness(bin string) string {
	return presetHarness("claude", bin, "", "60s", "30s")
}

// claudeGreeting is the conversation of US-001: a shell command through
// Claude Code's Bash tool, then the claim.
var claudeGreeting = fakemodel.Conversation{
	Match: "claude-story-greeting",
	Steps: []fakemodel.Step{
		{Text: "I'll write the greeting.", Tool: fakemodel.Shell("Bash", "echo hello > hello.txt")},
		{Text: "Wrote hello.txt.\nLearning: claude writes files with Bash\n<ralph>done</ralph>"},
	},
}

// TestClaudeLoop: ralph drives the real Claude Code through two stories.
// Claude Code writes the files with its own tools (Bash, and Write for a
// new file), the checks pass only when the files are right, and the
// ledger holds each iteration's tokens and cost.
func TestClaudeLoop(t *testing.T) {
	bin := findCLI(t, "claude", "claude")
	if inNetns(t) {
		return
	}
	dir := writeProject(t, claudeHarness(bin),
		storiesPRD("Claude e2e", "claude", `test "$(cat bye.txt)" = bye`, "grep -qx bye.txt listing.txt"),
		"## Codebase Patterns\n")
	s := startServer(t,
		claudeGreeting,
		fakemodel.Conversation{
			Match: "claude-story-farewell",
			Steps: []fakemodel.Step{
				// Write takes an absolute path.
				{Tool: &fakemodel.ToolCall{Name: "Write", Input: map[string]any{
					"file_path": filepath.Join(dir, "bye.txt"),
					"content":   "bye\n",
				}}},
				{Tool: fakemodel.Shell("Bash", "ls > listing.txt")},
				{Text: "Wrote bye.txt with Write.\n<ralph>done</ralph>"},
			},
		},
	)
	stdout, _ := runLoop(t, dir, claudeEnv(t, s), 0)
	wantStoriesDone(t, dir, stdout,
		// The view shows Claude Code's words and actions, not its JSON.
		[]string{
			"● session started: ",
			"I'll write the greeting.\n",
			"→ Bash: echo hello > hello.txt\n",
			"→ Write: " + filepath.Join(dir, "bye.txt") + "\n",
			"✓ result: 2 turns, $",
			"✓ result: 3 turns, $",
		},
		[]string{
			// Two requests (the tool call, then the final text) of 100 input
			// and 20 output tokens each, and Claude Code's price of them.
			"usage: 200 input tokens · 40 output tokens · $0.",
			"learning: claude writes files with Bash",
			"usage: 300 input tokens · 60 output tokens · $0.",
			"totals: iterations 2 · tokens 600 · cost $0.",
		})
}

// TestClaudeRateLimit: every answer Claude Code gets in its first run is a
// 429 (with retry-after: 1), until its own retries give up and its result
// is the API error; ralph waits (retry_backoff) and runs the iteration
// again, which is not an attempt, and the second run succeeds.
func TestClaudeRateLimit(t *testing.T) {
	bin := findCLI(t, "claude", "claude")
	if inNetns(t) {
		return
	}
	const requests = 1 + claudeMaxRetries
	conv := claudeGreeting
	conv.Faults = map[int][]fakemodel.Fault{0: repeatFault(fakemodel.Fault{Status: 429, Headers: map[string]string{"retry-after": "1"}}, requests)}
	s := startServer(t, conv)
	dir := writeProject(t, claudeHarness(bin), greetingPRD("Claude e2e", "claude"), "## Codebase Patterns\n")
	stdout, stderr := runLoop(t, dir, claudeEnv(t, s), 0)
	wantServed(t, s, 429, requests)
	wantContains(t, "stdout", stdout,
		fmt.Sprintf("✗ API error 429 rate_limit: retrying (%d of %d)", claudeMaxRetries, claudeMaxRetries),
		"✗ result: 1 turn, $0.0000 — API Error: Request rejected (429)",
	)
	wantRateLimitedThenDone(t, dir, stderr,
		"Request rejected (429)",
		"usage: 200 input tokens · 40 output tokens · $0.",
	)
	wantFile(t, dir, "hello.txt", "hello\n")
}
