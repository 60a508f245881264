package loop

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/ralph-harness/ralph/prd"
)

// TestJudgedDigest: the digest changes with what could make a story pass on
// less, and with nothing a person may do while a loop runs or after a kill.
func TestJudgedDigest(t *testing.T) {
	parse := func(text string) *prd.File { return mustParse(t, text) }
	base := `{"userStories": [
		{"id": "A", "title": "a", "passes": true},
		{"id": "B", "title": "b", "checks": ["make b"]},
		{"id": "C", "title": "c"}]}`
	was := judgedDigest(parse(base), "C")
	tests := []struct {
		name    string
		text    string
		changed bool
	}{
		{"the same", base, false},
		{"another story marked passing", `{"userStories": [
			{"id": "A", "title": "a", "passes": true},
			{"id": "B", "title": "b", "checks": ["make b"], "passes": true},
			{"id": "C", "title": "c"}]}`, true},
		{"a story's checks weakened", `{"userStories": [
			{"id": "A", "title": "a", "passes": true},
			{"id": "B", "title": "b", "checks": ["true"]},
			{"id": "C", "title": "c"}]}`, true},
		{"a story's checks removed", `{"userStories": [
			{"id": "A", "title": "a", "passes": true},
			{"id": "B", "title": "b"},
			{"id": "C", "title": "c"}]}`, true},
		{"a passing story removed", `{"userStories": [
			{"id": "B", "title": "b", "checks": ["make b"]},
			{"id": "C", "title": "c"}]}`, true},
		{"a story with checks added", `{"userStories": [
			{"id": "A", "title": "a", "passes": true},
			{"id": "B", "title": "b", "checks": ["make b"]},
			{"id": "C", "title": "c"},
			{"id": "D", "title": "d", "checks": ["true"]}]}`, true},
		// The running story's pass is resumeInFlight's to undo.
		{"the running story marked passing", `{"userStories": [
			{"id": "A", "title": "a", "passes": true},
			{"id": "B", "title": "b", "checks": ["make b"]},
			{"id": "C", "title": "c", "passes": true}]}`, false},
		{"stories reordered, retitled, described", `{"userStories": [
			{"id": "C", "title": "c!", "description": "more"},
			{"id": "B", "title": "b!", "checks": ["make b"]},
			{"id": "A", "title": "a!", "passes": true}]}`, false},
		{"a story added", `{"userStories": [
			{"id": "A", "title": "a", "passes": true},
			{"id": "B", "title": "b", "checks": ["make b"]},
			{"id": "C", "title": "c"},
			{"id": "D", "title": "d"}]}`, true},
		{"the running story removed", `{"userStories": [
			{"id": "A", "title": "a", "passes": true},
			{"id": "B", "title": "b", "checks": ["make b"]}]}`, true},
		{"questions, answers and attempts", `{"userStories": [
			{"id": "A", "title": "a", "passes": true},
			{"id": "B", "title": "b", "checks": ["make b"], "blocked": "which?", "attempts": 2},
			{"id": "C", "title": "c"}]}`, false},
	}
	for _, tt := range tests {
		if got := judgedDigest(parse(tt.text), "C") != was; got != tt.changed {
			t.Errorf("%s: changed = %v, want %v", tt.name, got, tt.changed)
		}
	}
	// A check split in two is another list of checks.
	one := parse(`{"userStories": [{"id": "A", "title": "a", "checks": ["x\"y"]}]}`)
	two := parse(`{"userStories": [{"id": "A", "title": "a", "checks": ["x", "y"]}]}`)
	if judgedDigest(one, "") == judgedDigest(two, "") {
		t.Error("two lists of checks have one digest")
	}
}

// BenchmarkJudgedDigest: the digest of prd.json every iteration's marker
// keeps, at 100 and 10,000 stories.
func BenchmarkJudgedDigest(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			var text strings.Builder
			text.WriteString(`{"userStories": [`)
			for i := range n {
				if i > 0 {
					text.WriteString(",")
				}
				fmt.Fprintf(&text, `{"id": "US-%05d", "title": "t", "passes": %v, "checks": ["make test-%d"]}`, n-i, i%2 == 0, i)
			}
			text.WriteString("]}")
			f := mustParse(b, text.String())
			b.ReportAllocs()
			for b.Loop() {
				judgedDigest(f, "US-00001")
			}
		})
	}
}

// TestGuardedSumsIndex: in a git work tree, each protected file has a
// second digest, of its entry in git's index, which changes when the entry
// does (taken out of the index too); outside one, none.
func TestGuardedSumsIndex(t *testing.T) {
	files := func(inGit bool, index string) fileSnapshot {
		return fileSnapshot{inGit: inGit, protected: map[string]fileState{"acceptance/check.sh": {index: index}}}
	}
	if sums := guardedSums(nil, false, nil, "", files(false, "")); len(sums) != 1 {
		t.Fatalf("outside git: got %v, want the contents' digest alone", sums)
	}
	tracked := guardedSums(nil, false, nil, "", files(true, "100644 5716ca5987cbf97d6bb54920bea6adde242d87e6"))
	if len(tracked) != 2 || tracked[1].Name != "acceptance/check.sh (git's index)" {
		t.Fatalf("in git: got %v, want the contents' digest and the index's", tracked)
	}
	for _, index := range []string{"", "100755 5716ca5987cbf97d6bb54920bea6adde242d87e6", "100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"} {
		if now := guardedSums(nil, false, nil, "", files(true, index)); now[1].Digest == tracked[1].Digest {
			t.Errorf("index entry %q: the same digest as the entry it replaced", index)
		}
	}
}
