// Package tail keeps the last bytes of a stream, so that output of any size
// can be watched while only a bounded amount of it is held in memory.
package tail

import (
	"sync"
	"unicode/utf8"
)

// Buffer is an io.Writer that keeps only the last bytes written to it, up to
// the size given to New; its memory never exceeds that size, however much is
// written. It is safe for concurrent use, because a child's stdout and stderr
// are copied into it from different goroutines.
type Buffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte // grows up to max, then is used as a ring
	next    int    // once full: where the next byte goes, which is also the oldest byte
	dropped bool   // some bytes were pushed out
}

// New returns a Buffer that keeps the last size bytes; size < 1 keeps nothing.
func New(size int) *Buffer {
	if size < 0 {
		size = 0
	}
	return &Buffer{max: size}
}

// Write keeps the tail of p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	n := len(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max == 0 {
		b.dropped = b.dropped || n > 0
		return n, nil
	}
	if len(p) >= b.max {
		// Only the last max bytes of p can survive: start over with them.
		b.dropped = b.dropped || len(b.buf) > 0 || len(p) > b.max
		if cap(b.buf) < b.max {
			b.buf = make([]byte, b.max)
		}
		b.buf = b.buf[:b.max]
		copy(b.buf, p[len(p)-b.max:])
		b.next = 0
		return n, nil
	}
	if room := b.max - len(b.buf); room > 0 {
		// Still filling up.
		k := min(room, len(p))
		if len(b.buf)+k > cap(b.buf) {
			// Grow by hand: append could round the capacity past max.
			grown := make([]byte, len(b.buf), min(b.max, max(2*cap(b.buf), len(b.buf)+k)))
			copy(grown, b.buf)
			b.buf = grown
		}
		b.buf = append(b.buf, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		// Full: overwrite the oldest bytes, wrapping around.
		k := copy(b.buf[b.next:], p)
		p = p[k:]
		b.next = (b.next + k) % b.max
		b.dropped = true
	}
	return n, nil
}

// Bytes returns a copy of the kept bytes, oldest first.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]byte, 0, len(b.buf))
	out = append(out, b.buf[b.next:]...)
	return append(out, b.buf[:b.next]...)
}

// String returns the kept bytes as text. When older bytes were pushed out, the
// cut may have split a UTF-8 sequence; its leftover continuation bytes at the
// start are dropped so the text does not begin with garbage.
func (b *Buffer) String() string {
	p := b.Bytes()
	if b.Truncated() {
		for i := 0; i < utf8.UTFMax-1 && len(p) > 0 && !utf8.RuneStart(p[0]); i++ {
			p = p[1:]
		}
	}
	return string(p)
}

// Len returns the number of bytes kept.
func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buf)
}

// Truncated reports whether bytes were pushed out, so the kept bytes are not
// everything that was written.
func (b *Buffer) Truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}
