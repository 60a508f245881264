package loop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConflictMarker: a conflict's marker is a whole line's start, counted
// as a line however long the lines before it are; the same text inside a
// line is none.
func TestConflictMarker(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	for _, c := range []struct {
		text string
		want int
	}{
		{"a\nb\n", 0},
		{"<<<<<<< HEAD\n", 1},
		{"a\r\n<<<<<<< HEAD\r\nb\n", 2},
		{"Notes\n=======\n", 0}, // a heading
		{long + "\n" + long + "\n>>>>>>> other\n", 3},
		{long + ">>>>>>> other\n", 0},
		{"a\n" + long + "<<<<<<< HEAD" + "\n", 0},
		{"x =======\n", 0},
	} {
		path := filepath.Join(t.TempDir(), "progress.txt")
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := conflictMarker(path)
		if err != nil || got != c.want {
			t.Errorf("conflictMarker(%.20q…) = %d, %v; want %d", c.text, got, err, c.want)
		}
	}
}
