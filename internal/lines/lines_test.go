package lines

import (
	"bytes"
	"slices"
	"strconv"
	"testing"
)

func TestSplitter(t *testing.T) {
	tests := []struct {
		name  string
		max   int
		input string
		want  []string // "long:n" for a line passed over
	}{
		{"lines", 10, "a\nbb\n\nccc", []string{"a", "bb", "", "ccc"}},
		{"exactly max", 3, "abc\nd\n", []string{"abc", "d"}},
		{"too long", 3, "abcd\ne\n", []string{"long:4", "e"}},
		{"too long at the end", 3, "a\nbcdefg", []string{"a", "long:6"}},
		{"no input", 3, "", nil},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 2, 100} {
			var got []string
			s := Splitter{
				Max:  tt.max,
				Line: func(b []byte) { got = append(got, string(b)) },
				Long: func(n int64) { got = append(got, "long:"+strconv.FormatInt(n, 10)) },
			}
			for in := tt.input; len(in) > 0; {
				n := min(chunk, len(in))
				s.Write([]byte(in[:n]))
				in = in[n:]
			}
			s.Flush()
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s (chunks of %d): lines %q, want %q", tt.name, chunk, got, tt.want)
			}
		}
	}
}

func TestSplitterMemory(t *testing.T) {
	var long int64
	s := Splitter{Max: 1 << 10, Line: func([]byte) {}, Long: func(n int64) { long = n }}
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	for range 64 { // a 2 MiB line
		s.Write(chunk)
	}
	s.Write([]byte("\n"))
	if long != 64*32<<10 {
		t.Errorf("long line reported as %d bytes, want %d", long, 64*32<<10)
	}
	if cap(s.buf) > 2<<10 {
		t.Errorf("line buffer grew to %d bytes for a limit of %d", cap(s.buf), 1<<10)
	}
}
