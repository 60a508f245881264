package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHead(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		mark string
		want string
	}{
		{"short", 10, "…", "short"},
		{"exactly10!", 10, "…", "exactly10!"},
		{"one byte over", 12, "…", "one byte …"},
		{"ééééé", 6, "", "ééé"},
		{"ééééé", 7, "", "ééé"}, // not half an é
		{"ééééé", 8, "+", "ééé+"},
		{"abc", 0, "", ""},
		{"abcdef", 2, "[cut]", "[cut]"}, // no room: the mark alone
	}
	for _, tt := range tests {
		got := Head(tt.s, tt.n, tt.mark)
		if got != tt.want {
			t.Errorf("Head(%q, %d, %q) = %q, want %q", tt.s, tt.n, tt.mark, got, tt.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Head(%q, %d, %q) = %q: not valid UTF-8", tt.s, tt.n, tt.mark, got)
		}
	}
}

func TestTail(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "def"},
		{"ééééé", 5, "éé"}, // not half an é
		{"ééééé", 4, "éé"},
		{"abc", 0, ""},
	}
	for _, tt := range tests {
		if got := Tail(tt.s, tt.n); got != tt.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got, want := OneLine("  a\n\tb   c \r\n", 20), "a b c"; got != want {
		t.Errorf("OneLine = %q, want %q", got, want)
	}
	long := OneLine(strings.Repeat("ü ", 100), 21)
	if len(long) > 21 || !strings.HasSuffix(long, "…") || !utf8.ValidString(long) {
		t.Errorf("OneLine of a long text = %q (%d bytes), want at most 21 bytes ending in …", long, len(long))
	}
}
