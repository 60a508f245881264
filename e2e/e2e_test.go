// Package e2e drives the real agent CLIs with ralph, offline: each CLI runs
// with its own HOME, a fake key, and its API pointed at a fake model server
// on 127.0.0.1 that is also its HTTPS proxy, so any attempt to leave the
// machine is seen and fails the test. The CLIs come from .ci/install-agents;
// without them these tests skip.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/internal/fakemodel"
)

var ralphBin string

func TestMain(m *testing.M) {
	// A test run again inside a network namespace (inNetns) uses the
	// binary its parent built.
	if bin := os.Getenv("RALPH_E2E_RALPH_BIN"); bin != "" {
		ralphBin = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "ralph-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ralphBin = filepath.Join(dir, "ralph")
	_, file, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-o", ralphBin, ".")
	build.Dir = filepath.Dir(filepath.Dir(file))
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build ralph: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// inNetns runs the calling test again, in a process of its own, inside a
// new network namespace where only loopback exists (unshare -rn), so that
// the CLI cannot reach any other host even past the proxy guard. It returns
// true when it did (the caller then returns: the child did the work); false
// inside the child, or where namespaces are not allowed, after saying so.
func inNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv("RALPH_E2E_NETNS") != "" {
		return false
	}
	const up = "ip link set lo up"
	if out, err := exec.Command("unshare", "-rn", "sh", "-c", up).CombinedOutput(); err != nil {
		t.Logf("no network namespace (unshare -rn sh -c %q: %v %s): relying on the proxy guard", up, err, out)
		return false
	}
	cmd := exec.Command("unshare", "-rn", "sh", "-c", up+` && exec "$@"`, "sh",
		os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "RALPH_E2E_NETNS=1", "RALPH_AGENTS_DIR="+agentsDir(), "RALPH_E2E_RALPH_BIN="+ralphBin)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s in a network namespace: %v\n%s", t.Name(), err, out)
	}
	if testing.Verbose() {
		t.Logf("ran in a network namespace:\n%s", out)
	}
	return true
}

// agentsDir is where .ci/install-agents puts the CLIs.
func agentsDir() string {
	if d := os.Getenv("RALPH_AGENTS_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "ralph-agents")
}

// findCLI returns the path of an installed agent CLI, or skips the test
// saying how to install it.
func findCLI(t testing.TB, name, bin string) string {
	t.Helper()
	path := filepath.Join(agentsDir(), name, "node_modules", ".bin", bin)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s is not installed: run .ci/install-agents (or set RALPH_AGENTS_DIR) to enable this test", name)
	}
	return path
}

// startServer starts a fake model server for the test.
func startServer(t testing.TB, convs ...fakemodel.Conversation) *fakemodel.Server {
	t.Helper()
	s, err := fakemodel.Start(convs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		if esc := s.Escapes(); len(esc) > 0 {
			t.Errorf("the agent tried to leave the machine:\n%s", strings.Join(esc, "\n"))
		}
		if t.Failed() {
			t.Logf("fake model server log:\n%s", strings.Join(s.Log(), "\n"))
		}
	})
	return s
}

// writeFiles writes a project's files into a new directory and returns it.
func writeFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFilesIn(t, dir, files)
	return dir
}

// writeFilesIn writes files into dir, making the directories they need.
func writeFilesIn(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeProject writes a project of harness.toml, prd.json and progress.txt
// into a new directory and returns it.
func writeProject(t testing.TB, harness, prd, progress string) string {
	t.Helper()
	return writeFiles(t, map[string]string{
		"harness.toml": harness,
		"prd.json":     prd,
		"progress.txt": progress,
	})
}

// isolatedEnv is the environment of a CLI under test: a fresh HOME, no
// variables of the developer's own agents, every proxy pointed at the fake
// server, and what the test adds.
func isolatedEnv(t testing.TB, s *fakemodel.Server, extra ...string) []string {
	t.Helper()
	home := t.TempDir()
	env := []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + t.TempDir(),
		"LANG=C.UTF-8",
		"HTTPS_PROXY=" + s.URL, "https_proxy=" + s.URL,
		"HTTP_PROXY=" + s.URL, "http_proxy=" + s.URL,
		"ALL_PROXY=" + s.URL,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		"DO_NOT_TRACK=1",
		"CI=true",
		"GIT_AUTHOR_NAME=ralph e2e", "GIT_AUTHOR_EMAIL=e2e@ralph.invalid",
		"GIT_COMMITTER_NAME=ralph e2e", "GIT_COMMITTER_EMAIL=e2e@ralph.invalid",
	}
	return append(env, extra...)
}

// envHome is the HOME of an environment from isolatedEnv.
func envHome(env []string) string {
	var home string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	return home
}

// runRalph runs the ralph binary in dir and returns its output and exit
// code.
func runRalph(t testing.TB, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(ralphBin, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run ralph: %v", err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}

// runLoop runs `ralph loop` in dir and returns its output, failing the test
// at once unless it exits with the code wanted.
func runLoop(t testing.TB, dir string, env []string, want int) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, code := runRalph(t, dir, env, "loop")
	if code != want {
		t.Fatalf("ralph loop exited %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
	return stdout, stderr
}

// readFile returns a file's content, failing the test when it is missing.
func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantFile fails the test unless the file name in dir holds want.
func wantFile(t testing.TB, dir, name, want string) {
	t.Helper()
	if got := readFile(t, filepath.Join(dir, name)); got != want {
		t.Errorf("%s = %q, want %q", name, got, want)
	}
}

// wantContains fails the test for each of wants that text, named name in
// the message, lacks.
func wantContains(t testing.TB, name, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", name, want, text)
		}
	}
}

// wantView fails the test unless ralph's view of the agent, its stdout,
// shows each of wants and none of the agent's raw JSON.
func wantView(t testing.TB, stdout string, wants ...string) {
	t.Helper()
	wantContains(t, "stdout", stdout, wants...)
	if strings.Contains(stdout, `"type":`) {
		t.Errorf("stdout shows raw JSON:\n%s", stdout)
	}
}

// wantServed fails the test unless the server answered n requests with a
// fault of the given status.
func wantServed(t testing.TB, s *fakemodel.Server, status, n int) {
	t.Helper()
	log := strings.Join(s.Log(), "\n")
	if got := strings.Count(log, fmt.Sprintf("fault %d", status)); got != n {
		t.Errorf("the server served %d %ds, want %d:\n%s", got, status, n, log)
	}
}

// repeatFault is n copies of f: the faults of a step that a CLI retries
// n-1 times before it gives up.
func repeatFault(f fakemodel.Fault, n int) []fakemodel.Fault {
	fs := make([]fakemodel.Fault, n)
	for i := range fs {
		fs[i] = f
	}
	return fs
}

// The project of a CLI's tests: the harness of the CLI's preset, and
// stories whose descriptions each hold a word that only their own prompts
// contain (<cli>-story-greeting, <cli>-story-farewell), which selects
// their conversations on the fake server (ids and titles also reach later
// prompts through the ledger).

// presetHarness is harness.toml for a CLI's preset run by the installed
// binary bin, with agent.args (TOML array items; none when empty) and the
// timeouts given, a retry a second after a rate limit, and the check of
// US-001 that hello.txt says hello.
func presetHarness(preset, bin, args, timeout, idleTimeout string) string {
	agent := fmt.Sprintf("preset = %q\ncommand = [%q]\n", preset, bin)
	if args != "" {
		agent += "args = [" + args + "]\n"
	}
	return fmt.Sprintf(`[agent]
%stimeout = %q
idle_timeout = %q
retry_backoff = "1s"

[[checks]]
name = "hello"
run = "test \"$(cat hello.txt)\" = hello"
timeout = "10s"

[git]
commit = false
`, agent, timeout, idleTimeout)
}

// storiesPRD is prd.json of a CLI's loop test: US-001 writes hello.txt
// (the harness checks it), US-002 writes bye.txt, which farewellChecks
// check.
func storiesPRD(project, cli string, farewellChecks ...string) string {
	checks := make([]string, len(farewellChecks))
	for i, c := range farewellChecks {
		b, _ := json.Marshal(c) // a string always marshals
		checks[i] = string(b)
	}
	return fmt.Sprintf(`{
  "project": %q,
  "userStories": [
    {
      "id": "US-001",
      "title": "Greeting",
      "description": "Write hello.txt (%s-story-greeting).",
      "priority": 1,
      "passes": false
    },
    {
      "id": "US-002",
      "title": "Farewell",
      "description": "Write bye.txt (%s-story-farewell).",
      "priority": 2,
      "passes": false,
      "checks": [%s]
    }
  ]
}
`, project, cli, cli, strings.Join(checks, ", "))
}

// greetingPRD is prd.json of a CLI's rate-limit test: US-001 of
// storiesPRD alone.
func greetingPRD(project, cli string) string {
	return fmt.Sprintf(`{"project": %q, "userStories": [{"id": "US-001", "title": "Greeting", "description": "Write hello.txt (%s-story-greeting).", "priority": 1, "passes": false}]}`, project, cli)
}

// wantListPrompt runs the loop over greetingPRD's one story with a prompt
// template that opens with a list, so that the prompt starts with "-", and
// wants the story done: a CLI that takes its prompt as an argument must not
// read such a prompt as flags of its own.
func wantListPrompt(t testing.TB, harness, cli string, env []string) {
	t.Helper()
	dir := writeProject(t, harness+"\n[prompt]\ntemplate = \"list.tmpl\"\n", greetingPRD(cli+" e2e", cli), "## Codebase Patterns\n")
	writeFilesIn(t, dir, map[string]string{"list.tmpl": "- task {{.Story.ID}}: {{.Story.Description}}\n- end with <ralph>done</ralph>\n"})
	runLoop(t, dir, env, 0)
	wantFile(t, dir, "hello.txt", "hello\n")
}

// wantStoriesDone checks the end of a loop through storiesPRD: hello.txt
// and bye.txt written, ralph's view showing view and no raw JSON, the
// ledger holding both iterations, done, and ledger, with one usage line
// per iteration, and both stories passing. It returns the ledger.
func wantStoriesDone(t testing.TB, dir, stdout string, view, ledger []string) string {
	t.Helper()
	wantFile(t, dir, "hello.txt", "hello\n")
	wantFile(t, dir, "bye.txt", "bye\n")
	wantView(t, stdout, view...)
	progress := readFile(t, filepath.Join(dir, "progress.txt"))
	wantContains(t, "progress.txt", progress, append([]string{
		"=== ralph iteration 1 · US-001 · done ===",
		"=== ralph iteration 2 · US-002 · done ===",
	}, ledger...)...)
	if n := strings.Count(progress, "\nusage: "); n != 2 {
		t.Errorf("progress.txt has %d usage lines, want one per iteration (2):\n%s", n, progress)
	}
	if prd := readFile(t, filepath.Join(dir, "prd.json")); strings.Count(prd, `"passes": true`) != 2 {
		t.Errorf("prd.json: want both stories passing:\n%s", prd)
	}
	return progress
}

// wantRateLimitedThenDone checks the end of a loop through greetingPRD
// whose first run the CLI gave up on at a rate limit: ralph said it waited
// for the limit to pass, the ledger holds the rate-limited iteration, then
// the done one, and ledger, and the rate-limited run did not count as an
// attempt.
func wantRateLimitedThenDone(t testing.TB, dir, stderr string, ledger ...string) {
	t.Helper()
	if !strings.Contains(stderr, "ralph: waiting for the rate limit to pass") {
		t.Errorf("stderr does not say ralph waited for the rate limit:\n%s", stderr)
	}
	wantContains(t, "progress.txt", readFile(t, filepath.Join(dir, "progress.txt")), append([]string{
		"=== ralph iteration 1 · US-001 · rate-limited ===",
		"=== ralph iteration 2 · US-001 · done ===",
	}, ledger...)...)
	if got := readFile(t, filepath.Join(dir, "prd.json")); !strings.Contains(got, `"attempts": 1`) {
		t.Errorf("prd.json: want one attempt (the rate-limited run is not one):\n%s", got)
	}
}
