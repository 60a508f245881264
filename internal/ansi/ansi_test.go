package ansi

import "testing"

func TestString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"", ""},
		{"\x1b[1mTests:\x1b[22m       \x1b[1m\x1b[32m3 passed\x1b[39m\x1b[22m, 3 total", "Tests:       3 passed, 3 total"},
		{"\x1b[32m==== \x1b[32m\x1b[1m4 passed\x1b[0m\x1b[32m in 0.02s\x1b[0m\x1b[32m ====\x1b[0m", "==== 4 passed in 0.02s ===="},
		{"\x1b[38;2;255;0;0mred\x1b[0m", "red"},    // 24-bit colour
		{"\x1b[38:5:208mo\x1b[m", "o"},             // colons, and a reset without parameters
		{"a\x1b[?25lb\x1b[Kc", "abc"},              // private parameters, an erase
		{"tail \x1b[", "tail \x1b["},               // cut short: kept
		{"\x1b[12", "\x1b[12"},                     // no final byte
		{"\x1b]0;title\x07x", "\x1b]0;title\x07x"}, // not a CSI sequence
		{"\x1b\x1b[0mx", "\x1bx"},
		{"<ralph>done</ralph>\x1b[0m", "<ralph>done</ralph>"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := string(Append([]byte("x"), []byte(tt.in))); got != "x"+tt.want {
			t.Errorf("Append(x, %q) = %q, want %q", tt.in, got, "x"+tt.want)
		}
	}
}

func TestStringKeepsPlainText(t *testing.T) {
	s := "no escapes here"
	if got := String(s); got != s {
		t.Errorf("String(%q) = %q", s, got)
	}
	if n := testing.AllocsPerRun(100, func() { String(s) }); n != 0 {
		t.Errorf("String of plain text allocates %v times", n)
	}
}
