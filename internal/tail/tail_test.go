package tail

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestBuffer(t *testing.T) {
	tests := []struct {
		name      string
		max       int
		writes    []string
		want      string
		truncated bool
	}{
		{"empty", 4, nil, "", false},
		{"short", 4, []string{"ab"}, "ab", false},
		{"exact", 4, []string{"ab", "cd"}, "abcd", false},
		{"one over", 4, []string{"abcd", "e"}, "bcde", true},
		{"wraps twice", 4, []string{"abc", "def", "ghi"}, "fghi", true},
		{"long write", 4, []string{"a", "bcdefgh"}, "efgh", true},
		{"long write alone", 4, []string{"abcdefgh"}, "efgh", true},
		{"write of max into empty", 4, []string{"abcd"}, "abcd", false},
		{"write of max after data", 4, []string{"x", "abcd"}, "abcd", true},
		{"zero max", 0, []string{"abc"}, "", true},
		{"empty writes", 3, []string{"", "a", "", "b"}, "ab", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.max)
			for _, w := range tt.writes {
				n, err := b.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
				}
			}
			if got := string(b.Bytes()); got != tt.want {
				t.Errorf("Bytes() = %q, want %q", got, tt.want)
			}
			if got := b.Len(); got != len(tt.want) {
				t.Errorf("Len() = %d, want %d", got, len(tt.want))
			}
			if got := b.Truncated(); got != tt.truncated {
				t.Errorf("Truncated() = %v, want %v", got, tt.truncated)
			}
		})
	}
}

// TestBufferRandom compares the ring against the obvious implementation
// (keep everything, slice the end) over random write sizes.
func TestBufferRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		size := 1 + r.IntN(64)
		b := New(size)
		var all []byte
		for range r.IntN(40) {
			p := make([]byte, r.IntN(3*size))
			for i := range p {
				p[i] = byte('a' + r.IntN(26))
			}
			b.Write(p)
			all = append(all, p...)
		}
		want := all[max(0, len(all)-size):]
		if got := b.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("round %d (size %d): Bytes() = %q, want %q", round, size, got, want)
		}
		if cap(b.buf) > size {
			t.Fatalf("round %d: buffer capacity %d exceeds size %d", round, cap(b.buf), size)
		}
	}
}

func TestBufferStringDropsSplitRune(t *testing.T) {
	b := New(4)
	b.Write([]byte("xé€ok")) // € is 3 bytes: the last 4 bytes start inside it
	if got, want := b.String(), "ok"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	b = New(5)
	b.Write([]byte("é€")) // exactly 5 bytes: nothing dropped, nothing trimmed
	if got, want := b.String(), "é€"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestBufferLarge(t *testing.T) {
	b := New(1 << 10)
	chunk := []byte(strings.Repeat("0123456789", 3277)) // ~32 KiB
	for range 320 {                                     // ~10 MB in total
		b.Write(chunk)
	}
	if got := b.Len(); got != 1<<10 {
		t.Errorf("Len() = %d, want %d", got, 1<<10)
	}
	if cap(b.buf) != 1<<10 {
		t.Errorf("buffer capacity = %d, want %d", cap(b.buf), 1<<10)
	}
}
