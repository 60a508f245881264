package redact

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestWriter: whatever the writes a text arrives in, what comes out is the
// text with its secrets replaced, a secret cut across writes included.
func TestWriter(t *testing.T) {
	r := New([]string{
		"ANTHROPIC_API_KEY=sk-ant-abcdef123456",
		"GITHUB_TOKEN=ghp_0123456789",
	}, []string{"MY_SECRET=sk-ant-abcdef123456-long"})
	texts := []string{
		"key sk-ant-abcdef123456 used\n",
		"sk-ant-abcdef123456-long and ghp_0123456789",
		"sk-ant-abcdef12345 is not one, nor is ghp_012345678",
		"ends with the start of one: sk-ant-abc",
		"sk-ant-abcdef123456sk-ant-abcdef123456",
		"no secret at all",
		"sk-ant-abcdef123456-lo, nearly the longer one",
		"ghp_sk-ant-abcdef123456-longghp_0123456789g",
	}
	// And texts made of pieces of the secrets.
	rnd := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"sk-ant-abcdef123456", "-long", "ghp_0123456789", "sk-", "ant-", "abcdef", "123456", "ghp_", " ", "g", "s"}
	for range 300 {
		var b strings.Builder
		for range 1 + rnd.IntN(12) {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		want := r.String(text)
		// Every cut into two writes.
		for i := 0; i <= len(text); i++ {
			var out bytes.Buffer
			w := r.Writer(&out)
			for _, part := range []string{text[:i], text[i:]} {
				if n, err := w.Write([]byte(part)); n != len(part) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", part, n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Errorf("%q cut at %d: wrote %q, want %q", text, i, out.String(), want)
			}
		}
		// One byte at a time.
		var out bytes.Buffer
		w := r.Writer(&out)
		for i := range len(text) {
			w.Write([]byte{text[i]})
		}
		w.Flush()
		if out.String() != want {
			t.Errorf("%q byte by byte: wrote %q, want %q", text, out.String(), want)
		}
	}
}

// TestWriterHoldsBackLittle: only an end that may begin a secret waits for
// the next write; the rest is shown at once.
func TestWriterHoldsBackLittle(t *testing.T) {
	r := New([]string{"ANTHROPIC_API_KEY=sk-ant-abcdef123456"})
	var out bytes.Buffer
	w := r.Writer(&out)
	steps := []struct{ write, shown string }{
		{"working on it\n", "working on it\n"},
		{"the key is sk-an", "working on it\nthe key is "},
		{"t-abcdef123456, the rest", "working on it\nthe key is [redacted ANTHROPIC_API_KEY], the rest"},
		{" ends in s", "working on it\nthe key is [redacted ANTHROPIC_API_KEY], the rest ends in "},
		{"o", "working on it\nthe key is [redacted ANTHROPIC_API_KEY], the rest ends in so"},
	}
	for _, s := range steps {
		w.Write([]byte(s.write))
		if out.String() != s.shown {
			t.Errorf("after %q: shown %q, want %q", s.write, out.String(), s.shown)
		}
	}
	w.Write([]byte(" sk-"))
	w.Flush()
	if !strings.HasSuffix(out.String(), "so sk-") {
		t.Errorf("Flush did not pass on what was held back: %q", out.String())
	}
	// A secret that overlaps itself holds back no more than a secret's
	// length, however long the run of its character.
	r2 := New([]string{"DUMMY_API_KEY=xxxxxxxx"})
	out.Reset()
	w = r2.Writer(&out)
	run := []byte(strings.Repeat("x", 4096))
	for range 64 {
		w.Write(run)
		if held := len(w.held); held >= 2*len("xxxxxxxx") {
			t.Fatalf("%d bytes held back of a run of x", held)
		}
	}
	w.Flush()
	if want := r2.String(strings.Repeat("x", 64*4096)); out.String() != want {
		t.Errorf("a run of x came out as %d bytes, want %d", out.Len(), len(want))
	}
	// Without secrets, writes pass through.
	out.Reset()
	var none *Redactor
	w = none.Writer(&out)
	w.Write([]byte("sk-ant-"))
	if out.String() != "sk-ant-" {
		t.Errorf("a nil Redactor's writer held back or changed %q", out.String())
	}
	if err := w.Flush(); err != nil || out.String() != "sk-ant-" {
		t.Errorf("Flush = %v, wrote %q", err, out.String())
	}
}

// BenchmarkWriter: an agent's output, with two secrets of the usual shapes
// known and none in it, in the writes a pipe gives.
func BenchmarkWriter(b *testing.B) {
	r := New([]string{"ANTHROPIC_API_KEY=sk-ant-api03-kX9dQ2mVbT7wLpR4nYc8ZfHs1JgU6eAq", "GITHUB_TOKEN=ghp_4fN8qLz2XwR7mK1pT9vB3sY6dH0jC5gE"})
	chunk := []byte(strings.Repeat("--- PASS: TestParseConfig/Nested_Keys (0.00s) at main.go:42 OK s\n", 512))
	w := r.Writer(io.Discard)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		w.Write(chunk)
	}
}

// TestIndex: looking for a secret by its anchor finds what bytes.Index
// finds, wherever in the secret the anchor is.
func TestIndex(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for _, value := range []string{"Zabcdefg", "abcdefgZ", "abcZdefg", "aaaaaaaa", "ab-ab-ab-ab"} {
		s := newSecret("X", value)
		for range 2000 {
			b := make([]byte, rnd.IntN(40))
			for i := range b {
				b[i] = "abcdefgZ-"[rnd.IntN(9)]
			}
			if rnd.IntN(3) == 0 {
				at := rnd.IntN(len(b) + 1)
				b = append(b[:at:at], append([]byte(value), b[at:]...)...)
			}
			from := rnd.IntN(len(b) + 1)
			want := bytes.Index(b[from:], s.bytes)
			if want >= 0 {
				want += from
			}
			if got := s.index(b, from); got != want {
				t.Fatalf("index(%q, %d) of %q (anchor %d) = %d, want %d", b, from, value, s.anchor, got, want)
			}
		}
	}
}

// TestWriterCutLines: an agent's tool line cut short shows no start of a
// secret, and a secret that comes many times is written in one piece.
func TestWriterCutLines(t *testing.T) {
	r := New([]string{"MY_API_KEY=tok_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "DUMMY_KEY=xxxxxxxx"})
	var out countingWriter
	w := r.Writer(&out)
	// The ellipsis split between two writes, as a pipe may split it.
	line := "→ Bash: echo aaaa tok_ABCDEFGHIJKLMNOP…\n"
	split := strings.Index(line, "…") + 1
	w.Write([]byte(line[:split]))
	w.Write([]byte(line[split:]))
	w.Write([]byte(strings.Repeat("xxxxxxxx", 1000) + "\n"))
	w.Flush()
	want := "→ Bash: echo aaaa [redacted MY_API_KEY]…\n" + strings.Repeat("[redacted DUMMY_KEY]", 1000) + "\n"
	if out.String() != want {
		t.Errorf("wrote %q..., want %q...", out.String()[:80], want[:80])
	}
	if out.writes > 4 {
		t.Errorf("%d writes for three", out.writes)
	}
}

type countingWriter struct {
	bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.Buffer.Write(p)
}
