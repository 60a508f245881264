// Package glob matches slash-separated paths against the globs harness.toml
// and the API agent's tools take: path.Match syntax per segment, where a
// "**" segment matches any number of segments, none included.
package glob

import (
	"errors"
	"path"
	"strings"
)

// Set is a list of globs made ready to match many names: the loop matches
// every file of the project against the test and protected globs twice an
// iteration. A malformed glob matches nothing (Valid says why).
type Set struct {
	globs [][]segment
}

// segment is one segment of a glob. The usual shapes, a name ("tests"), a
// star with text around it ("*_test.go", "test_*.py") and "**", are matched
// without path.Match, which tries the star at every offset and checks the
// pattern's syntax every time it fails.
type segment struct {
	glob string
	kind byte // one of the kinds below
	// prefix and suffix are what surrounds the star of a starred segment.
	prefix, suffix string
}

const (
	anyDepth byte = iota // "**": any number of segments
	literal              // no metacharacter: the name itself
	starred              // prefix*suffix, no other metacharacter
	general              // anything else: path.Match
)

func compileSegment(g string) segment {
	switch {
	case g == "**":
		return segment{glob: g, kind: anyDepth}
	case !strings.ContainsAny(g, `*?[\`):
		return segment{glob: g, kind: literal}
	case strings.Count(g, "*") == 1 && !strings.ContainsAny(g, `?[\`):
		prefix, suffix, _ := strings.Cut(g, "*")
		return segment{glob: g, kind: starred, prefix: prefix, suffix: suffix}
	}
	return segment{glob: g, kind: general}
}

func (s segment) match(name string) bool {
	switch s.kind {
	case literal:
		return name == s.glob
	case starred:
		return len(name) >= len(s.prefix)+len(s.suffix) &&
			strings.HasPrefix(name, s.prefix) && strings.HasSuffix(name, s.suffix)
	}
	ok, err := path.Match(s.glob, name)
	return err == nil && ok
}

// Compile returns the set of the given globs.
func Compile(patterns ...string) Set {
	s := Set{globs: make([][]segment, len(patterns))}
	for i, p := range patterns {
		for _, g := range strings.Split(p, "/") {
			s.globs[i] = append(s.globs[i], compileSegment(g))
		}
	}
	return s
}

// Match reports whether name matches one of the set's globs.
func (s Set) Match(name string) bool {
	if len(s.globs) == 0 {
		return false
	}
	var buf [16]string
	segs := appendSegments(buf[:0], name)
	for _, g := range s.globs {
		if match(g, segs) {
			return true
		}
	}
	return false
}

// appendSegments appends the slash-separated segments of name to segs.
func appendSegments(segs []string, name string) []string {
	for {
		i := strings.IndexByte(name, '/')
		if i < 0 {
			return append(segs, name)
		}
		segs = append(segs, name[:i])
		name = name[i+1:]
	}
}

func match(glob []segment, name []string) bool {
	for len(glob) > 0 {
		if glob[0].kind == anyDepth {
			rest := glob[1:]
			if !deep(rest) {
				// What follows matches as many segments as it has:
				// the last ones of name.
				return len(name) >= len(rest) && match(rest, name[len(name)-len(rest):])
			}
			for i := 0; i <= len(name); i++ {
				if match(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 || !glob[0].match(name[0]) {
			return false
		}
		glob, name = glob[1:], name[1:]
	}
	return len(name) == 0
}

// deep reports whether glob has a "**" segment.
func deep(glob []segment) bool {
	for _, s := range glob {
		if s.kind == anyDepth {
			return true
		}
	}
	return false
}

// Valid reports what is wrong with pattern's syntax, or nil.
func Valid(pattern string) error {
	if pattern == "" {
		return errors.New("empty glob")
	}
	for _, seg := range strings.Split(pattern, "/") {
		if _, err := path.Match(seg, ""); err != nil {
			return err
		}
	}
	return nil
}
