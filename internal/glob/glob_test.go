package glob

import (
	"path"
	"strings"
	"testing"
)

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
		if got := Compile(tt.glob).Match(tt.name); got != tt.want {
			t.Errorf("Compile(%q).Match(%q) = %v, want %v", tt.glob, tt.name, got, tt.want)
		}
	}
	if Valid("[") == nil || Valid("") == nil || Valid("a/**/*.go") != nil {
		t.Errorf("Valid misjudges")
	}
}

func TestSet(t *testing.T) {
	s := Compile("**/*_test.go", "tests/**", "LICENSE")
	for name, want := range map[string]bool{
		"a_test.go": true, "pkg/a_test.go": true, "tests/x.py": true,
		"LICENSE": true, "docs/LICENSE": false, "pkg/a.go": false,
	} {
		if got := s.Match(name); got != want {
			t.Errorf("Match(%q) = %v, want %v", name, got, want)
		}
	}
	if Compile().Match("a") {
		t.Errorf("the empty set matched")
	}
}

// TestMatchLikeSegments checks the matcher against the definition, every
// pattern against every name built from a few segments: a "**" segment
// matches any number of segments, any other segment one, by path.Match.
func TestMatchLikeSegments(t *testing.T) {
	var reference func(pat, name []string) bool
	reference = func(pat, name []string) bool {
		if len(pat) == 0 {
			return len(name) == 0
		}
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if reference(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		ok, err := path.Match(pat[0], strings.Join(name[:min(1, len(name))], ""))
		return len(name) > 0 && err == nil && ok && reference(pat[1:], name[1:])
	}
	// all returns every path of 1 to n segments taken from segs.
	all := func(segs []string, n int) []string {
		out := []string{}
		prev := []string{""}
		for range n {
			var next []string
			for _, p := range prev {
				for _, s := range segs {
					if p == "" {
						next = append(next, s)
					} else {
						next = append(next, p+"/"+s)
					}
				}
			}
			out = append(out, next...)
			prev = next
		}
		return out
	}
	for _, pat := range all([]string{"**", "a", "*", "b?", "*c", "b*", "*b*", "[ab]", "[", "\\b"}, 3) {
		for _, name := range all([]string{"a", "bc", "b"}, 4) {
			want := reference(strings.Split(pat, "/"), strings.Split(name, "/"))
			if got := Compile(pat).Match(name); got != want {
				t.Errorf("Compile(%q).Match(%q) = %v, want %v", pat, name, got, want)
			}
		}
	}
}

// BenchmarkSet matches a project's files against the default test globs,
// as the guard does twice an iteration.
func BenchmarkSet(b *testing.B) {
	s := Compile("**/*_test.go", "**/test_*.py", "**/*_test.py",
		"**/*.test.js", "**/*.test.ts", "**/*.test.jsx", "**/*.test.tsx", "**/*.test.mjs",
		"**/*.spec.js", "**/*.spec.ts", "**/*.spec.jsx", "**/*.spec.tsx",
		"**/__tests__/**", "**/*_spec.rb", "**/*Test.java", "**/*Tests.cs", "tests/**")
	names := []string{"main.go", "internal/http/server.go", "internal/http/server_test.go",
		"web/src/components/Button.tsx", "web/src/components/__tests__/Button.test.tsx", "README.md"}
	for b.Loop() {
		for _, n := range names {
			s.Match(n)
		}
	}
}
