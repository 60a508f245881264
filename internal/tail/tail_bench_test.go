package tail

import (
	"bytes"
	"testing"
)

// BenchmarkWrite is the cost of keeping the tail of a stream, per byte,
// written in the 32 KiB chunks a child's output arrives in.
func BenchmarkWrite(b *testing.B) {
	chunk := bytes.Repeat([]byte("a line of output from the agent\n"), 1024)
	buf := New(64 << 10)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		buf.Write(chunk)
	}
}
