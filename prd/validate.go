package prd

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// validate checks what the types alone cannot: ids, titles, dependencies,
// counts. listed tells whether the file has a userStories array at all. Every
// problem is reported, one error each, prefixed by name.
func (f *File) validate(name string, listed bool) error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	switch {
	case !listed:
		add("missing userStories array")
	case len(f.Stories) == 0:
		add("userStories is empty: there is nothing to do")
	}

	// first maps each id to the index of the first story with it; dups
	// holds the ids more than one story has, usually none.
	first := make(map[string]int, len(f.Stories))
	var dups map[string]bool
	for i, s := range f.Stories {
		if _, seen := first[s.ID]; !seen {
			first[s.ID] = i
		} else if s.ID != "" {
			if dups == nil {
				dups = map[string]bool{}
			}
			dups[s.ID] = true
		}
	}
	delete(first, "")
	// storyName names the i-th story in messages: by its id when that is unique.
	storyName := func(i int) string {
		if s := f.Stories[i]; s.ID != "" && !dups[s.ID] {
			return s.ID
		}
		return fmt.Sprintf("userStories[%d]", i)
	}

	for i, s := range f.Stories {
		label := storyName(i)
		switch j := first[s.ID]; {
		case s.ID == "":
			add("%s: missing id", label)
		case j != i:
			add("userStories[%d]: duplicate id %q (first at userStories[%d])", i, s.ID, j)
		}
		if s.Title == "" {
			add("%s: missing title", label)
		}
		if s.Attempts < 0 {
			add("%s: attempts: want 0 or more, got %d", label, s.Attempts)
		}
		for j, c := range s.Checks {
			if strings.TrimSpace(c) == "" {
				add("%s: checks[%d] is empty", label, j)
			}
		}
	}
	for i, s := range f.Stories {
		for _, id := range s.DependsOn {
			switch _, known := first[id]; {
			case !known:
				add("%s: dependsOn names unknown story %q", storyName(i), id)
			case id == s.ID:
				add("%s: dependsOn names the story itself", storyName(i))
			}
		}
	}
	for _, c := range f.cycles(first) {
		add("dependsOn cycle: %s", strings.Join(c, " -> "))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	f.ids = first
	return nil
}

// cycles returns the dependency cycles among the stories, each as the ids along
// it with the first repeated at the end. first maps each id to the index of its
// story; unknown ids and a story naming itself are reported elsewhere.
func (f *File) cycles(first map[string]int) [][]string {
	const (
		unseen = iota
		onPath
		finished
	)
	state := make([]int, len(f.Stories))
	var path []int // indexes of the stories on the current path
	var found [][]string
	var visit func(i int)
	visit = func(i int) {
		state[i] = onPath
		path = append(path, i)
		s := f.Stories[i]
		for _, id := range s.DependsOn {
			j, known := first[id]
			if !known || id == s.ID {
				continue
			}
			switch state[j] {
			case unseen:
				visit(j)
			case onPath:
				var ids []string
				for _, k := range path[slices.Index(path, j):] {
					ids = append(ids, f.Stories[k].ID)
				}
				found = append(found, append(ids, id))
			}
		}
		path = path[:len(path)-1]
		state[i] = finished
	}
	for i := range f.Stories {
		if state[i] == unseen {
			visit(i)
		}
	}
	return found
}
