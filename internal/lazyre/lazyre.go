// Package lazyre compiles a regular expression when it is first used, not
// when ralph starts: every command would pay for every pattern at start,
// and most commands use none of them.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr on its first call and returns
// the same *regexp.Regexp from then on. A bad expr panics there, as
// regexp.MustCompile does.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
