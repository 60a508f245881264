// Package textcut shortens text for messages, records and prompts without
// ever splitting a UTF-8 sequence.
package textcut

import (
	"strings"
	"unicode/utf8"
)

// Head returns s when it is at most n bytes long; otherwise the longest
// start of s that ends on a rune boundary and leaves room for mark, with
// mark after it: at most n bytes in all, or mark alone when n leaves no
// room for more.
func Head(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	i := max(n-len(mark), 0)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + mark
}

// Tail returns the last n bytes of s at most, starting on a rune boundary.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - max(n, 0)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// OneLine collapses each run of whitespace in s, newlines included, to one
// space and cuts the result to n bytes with an ellipsis, so that it stays on
// one line of a terminal or a record.
func OneLine(s string, n int) string {
	return Head(strings.Join(strings.Fields(s), " "), n, "…")
}
