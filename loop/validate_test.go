package loop

import (
	"slices"
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
		// Written in pieces, as a reader hands them on.
		w := &conflictWatch{line: 1}
		for piece := range slices.Chunk([]byte(c.text), 5000) {
			w.Write(piece)
		}
		small := &conflictWatch{line: 1}
		for piece := range slices.Chunk([]byte(c.text), 3) {
			small.Write(piece)
		}
		if w.found != c.want || small.found != c.want {
			t.Errorf("conflictWatch(%.20q…) found line %d (in small pieces %d), want %d", c.text, w.found, small.found, c.want)
		}
	}
}
