// Package e2e drives the real agent CLIs with ralph, offline: each CLI runs
// with its own HOME, a fake key, and its API pointed at a fake model server
// on 127.0.0.1 that is also its HTTPS proxy, so any attempt to leave the
// machine is seen and fails the test. The CLIs come from .ci/install-agents;
// without them these tests skip.
package e2e

import (
	"bytes"
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
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
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

// readFile returns a file's content, failing the test when it is missing.
func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
