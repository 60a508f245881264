package loop

import "testing"

func TestMatchAny(t *testing.T) {
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
	}
	for _, tt := range tests {
		if got := matchAny([]string{tt.glob}, tt.name); got != tt.want {
			t.Errorf("matchAny(%q, %q) = %v, want %v", tt.glob, tt.name, got, tt.want)
		}
	}
	if ValidGlob("[") == nil || ValidGlob("") == nil || ValidGlob("a/**/*.go") != nil {
		t.Errorf("ValidGlob misjudges")
	}
}
