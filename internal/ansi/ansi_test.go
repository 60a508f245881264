package ansi

import "testing"

func TestString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"", ""},
		{"\x1b[1mTests:\x1b[22m       \x1b[1m\x1b[32m3 passed\x1b[39m\x1b[22m, 3 total", "Tests:       3 passed, 3 total"},
		{"\x1b[32m==== \x1b[32m\x1b[1m4 passed\x1b[0m\x1b[32m in 0.02s\x1b[0m\x1b[32m ====\x1b[0m", "==== 4 passed in 0.02s ===="},
		{"\x1b[38;2;255;0;0mred\x1b[0m", "red"},                  // 24-bit colour
		{"\x1b[38:5:208mo\x1b[m", "o"},                           // colons, and a reset without parameters
		{"a\x1b[?25lb\x1b[Kc", "abc"},                            // private parameters, an erase
		{"tail \x1b[", "tail \x1b["},                             // cut short: kept
		{"\x1b[12", "\x1b[12"},                                   // no final byte
		{"\x1b]0;title\x07x", "x"},                               // a window's title, ended by BEL
		{"\x1b]52;c;ZWNobw==\x1b\\x", "x"},                       // the clipboard written, ended by ST
		{"a\x1b]8;;http://h\x1b\\link\x1b]8;;\x1b\\b", "alinkb"}, // a hyperlink
		{"\x1bPq#0;2;0;0;0\x1b\\x", "x"},                         // DCS (sixel)
		{"\x1b_Gf=100;AAAA\x1b\\x", "x"},                         // APC (an image)
		{"a\x1b]0;cut short", "a"},                               // a string with no end: the rest is the terminal's
		{"\x1b]0;t\x18x", "x"},                                   // cancelled by CAN
		{"\x1b]0;t\x1b[1mx", "x"},                                // an ESC ends it, and starts a sequence
		{"\x1bcFAIL", "FAIL"},                                    // a reset
		{"a\x1b7b\x1b8c\x1bMd", "abcd"},                          // cursor saved and restored, reverse line feed
		{"\x1b(Bx\x1b)0y", "xy"},                                 // character sets
		{"\x1b", "\x1b"},                                         // alone
		{"\x1b\x07x", "\x1b\x07x"},                               // no sequence
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

// TestPrintable: what is left of a control once the sequences are gone is
// not shown either; tab and newline stay.
func TestPrintable(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain\ttext\nmore", "plain\ttext\nmore"},
		{"bell\x07 back\bspace", "bell backspace"},
		{"lone \x1b esc", "lone  esc"},
		{"c1 \u009b31m", "c1 31m"},
		{"del\x7f", "del"},
		{"bad \xff byte", "bad \uFFFD byte"},
	}
	for _, tt := range tests {
		if got := Printable(tt.in); got != tt.want {
			t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	s := "plain, tab\tand newline\n"
	if n := testing.AllocsPerRun(100, func() { Printable(s) }); n != 0 {
		t.Errorf("Printable of plain text allocates %v times", n)
	}
}
