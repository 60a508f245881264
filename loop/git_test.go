package loop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitMessageBounded: git's stderr is quoted on one line, cut to
// maxGitMessage, however much a program git ran (a filter) printed.
func TestGitMessageBounded(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	if _, err := git(context.Background(), dir, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{".gitattributes": "a.txt filter=loud\n", "a.txt": "a\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := git(context.Background(), dir, "-c", "filter.loud.clean=sh -c 'yes error line | head -5000 >&2; exit 1'",
		"-c", "filter.loud.required=true", "add", "a.txt")
	if err == nil {
		t.Fatal("git add with a failing required filter succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || len(msg) > maxGitMessage+100 || !strings.Contains(msg, "error line; error line") {
		t.Errorf("error of %d bytes (want at most about %d, one line, quoting git): %.200q", len(msg), maxGitMessage, msg)
	}
}
