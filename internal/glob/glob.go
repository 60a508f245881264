// Package glob matches slash-separated paths against the globs harness.toml
// and the API agent's tools take: path.Match syntax per segment, where a
// "**" segment matches any number of segments, none included.
package glob

import (
	"errors"
	"path"
	"strings"
)

// Match reports whether name matches pattern. A malformed pattern matches
// nothing (Valid says why).
func Match(pattern, name string) bool {
	return match(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func match(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if match(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], name[0]); err != nil || !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
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
