package textpos

import "testing"

func TestAt(t *testing.T) {
	data := []byte("[agent]\ncommand = [\"é\"]\n= 5\n")
	for _, c := range []struct {
		off  int
		want string
	}{
		{0, "f:1:1"},
		{7, "f:1:8"},   // the newline that ends line 1
		{8, "f:2:1"},   // the first byte of line 2
		{22, "f:2:14"}, // the quote after "é", two bytes that are one character
		{25, "f:3:1"},
		{-5, "f:1:1"},
		{1000, "f:4:1"},
	} {
		if got := At("f", data, c.off); got != c.want {
			t.Errorf("At(%d) = %s, want %s", c.off, got, c.want)
		}
	}
}
