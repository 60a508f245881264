package loop

import "testing"

func TestMatchAny(t *testing.T) {
	// The globs themselves are package glob's; any one of them will do.
	globs := []string{"tests/**", "**/*_test.go"}
	for name, want := range map[string]bool{"tests/x.py": true, "pkg/a_test.go": true, "pkg/a.go": false} {
		if got := matchAny(globs, name); got != want {
			t.Errorf("matchAny(%q, %q) = %v, want %v", globs, name, got, want)
		}
	}
}
