package glob

import "testing"

func TestMatch(t *testing.T) {
	tests := []struct {
		glob, name string
		want       bool
	}{
		{"**/*_test.go", "a_test.go", true},
		{"**/*_test.go", "pkg/sub/a_test.go", true},
		{"**/*_test.go", "pkg/a.go", false},
		{"tests/**", "tests/unit/x.py", true},
		{"tests/**", "src/tests/x.py", false},
		{"**/__tests__/**", "web/__tests__/a.js", true},
		{"migrations/*.sql", "migrations/001.sql", true},
		{"migrations/*.sql", "migrations/old/001.sql", false},
		{"LICENSE", "LICENSE", true},
		{"LICENSE", "docs/LICENSE", false},
		{"**", "anything/at/all", true},
		{"[", "[", false},
	}
	for _, tt := range tests {
		if got := Match(tt.glob, tt.name); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.glob, tt.name, got, tt.want)
		}
	}
	if Valid("[") == nil || Valid("") == nil || Valid("a/**/*.go") != nil {
		t.Errorf("Valid misjudges")
	}
}
