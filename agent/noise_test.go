package agent

import (
	"bytes"
	"strings"
	"testing"
)

// TestLineDropper: each whole line that is the noise is left out, however
// the output is cut into writes; every other byte is passed on, in order,
// a line that only starts like the noise or is cut short by the end
// included.
func TestLineDropper(t *testing.T) {
	const noise = "Reading additional input from stdin..."
	tests := []struct{ in, want string }{
		{noise + "\n", ""},
		{noise + "\r\n", ""},
		{"a\n" + noise + "\nb\n" + noise + "\n", "a\nb\n"},
		{noise + "\n" + noise + "\n", ""},
		{"Reading additional input from stdin!\n", "Reading additional input from stdin!\n"},
		{noise + " and more\n", noise + " and more\n"},
		{noise + "\r\r\n", noise + "\r\r\n"},
		{"x " + noise + "\n", "x " + noise + "\n"},
		{"Reading add", "Reading add"}, // cut short by the end
		{noise, noise},                 // no line end: not a line
		{"\n\nReading\nerror: 429\n", "\n\nReading\nerror: 429\n"},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 3, 7, len(tt.in) + 1} {
			var out bytes.Buffer
			d := &lineDropper{w: &out, line: noise}
			for in := tt.in; in != ""; {
				k := min(size, len(in))
				if n, err := d.Write([]byte(in[:k])); n != k || err != nil {
					t.Fatalf("Write = %d, %v; want %d, nil", n, err, k)
				}
				in = in[k:]
			}
			if err := d.flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("%q in writes of %d: passed on %q, want %q", tt.in, size, out.String(), tt.want)
			}
		}
	}
}

// TestCodexStdinNoise: codex's line about reading its stdin is not shown,
// and is kept in the stderr a failure is told from; its other stderr is
// shown as it is.
func TestCodexStdinNoise(t *testing.T) {
	o := script(`printf 'Reading additional input from stdin...\n' >&2
echo '{"type":"item.completed","item":{"type":"agent_message","text":"<ralph>done</ralph>"}}'
echo '{"type":"turn.completed"}'
printf 'warning: slow\n' >&2`)
	o.Format = CodexJSON
	res := run(t, o)
	shown := o.Output.(*syncBuffer).String()
	if strings.Contains(shown, "Reading additional input") || !strings.Contains(shown, "warning: slow\n") || !strings.Contains(shown, "<ralph>done</ralph>") {
		t.Errorf("shown:\n%s\nwant the message and the warning, not the line about stdin", shown)
	}
	if !strings.Contains(res.Stderr, "Reading additional input from stdin...\n") {
		t.Errorf("Stderr = %q, want the line about stdin kept", res.Stderr)
	}
}
