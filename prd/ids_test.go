package prd

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestIDIndex(t *testing.T) {
	var stories []*Story
	for i := range 100 {
		stories = append(stories, &Story{ID: fmt.Sprintf("US-%03d", i%90)})
	}
	x := newIDIndex(len(stories))
	for i, s := range stories {
		first, added := x.add(idHash(s.ID), i, stories)
		if wantAdded := i < 90; added != wantAdded || first != i%90 {
			t.Fatalf("add(%s) at %d = %d, %v; want %d, %v", s.ID, i, first, added, i%90, wantAdded)
		}
	}
	for i := range 90 {
		id := fmt.Sprintf("US-%03d", i)
		if j, ok := x.lookup(idHash(id), id, stories); !ok || j != i {
			t.Errorf("lookup(%s) = %d, %v; want %d", id, j, ok, i)
		}
	}
	if j, ok := x.lookup(idHash("US-090"), "US-090", stories); ok {
		t.Errorf("lookup of an id no story has = %d", j)
	}
	// A story the index knows that is gone, or has another id now, is not
	// found.
	if j, ok := x.lookup(idHash("US-089"), "US-089", stories[:89]); ok {
		t.Errorf("lookup of a story cut off = %d", j)
	}
	moved := append([]*Story{{ID: "X"}}, stories...)
	if j, ok := x.lookup(idHash("US-005"), "US-005", moved); ok {
		t.Errorf("lookup of a story moved = %d", j)
	}
	var none *idIndex
	if _, ok := none.lookup(idHash("US-001"), "US-001", stories); ok {
		t.Error("an index never built found a story")
	}
}

// TestIDIndexSameHash gives different ids the same hash: the index tells
// them apart by the ids themselves.
func TestIDIndexSameHash(t *testing.T) {
	stories := []*Story{{ID: "A"}, {ID: "B"}, {ID: "A"}, {ID: "C"}}
	const h = 0xdeadbeef_00000003
	x := newIDIndex(len(stories))
	for i, want := range []struct {
		first int
		added bool
	}{{0, true}, {1, true}, {0, false}, {3, true}} {
		if first, added := x.add(h, i, stories); first != want.first || added != want.added {
			t.Errorf("add(%s) at %d = %d, %v; want %d, %v", stories[i].ID, i, first, added, want.first, want.added)
		}
	}
	for id, want := range map[string]int{"A": 0, "B": 1, "C": 3} {
		if j, ok := x.lookup(h, id, stories); !ok || j != want {
			t.Errorf("lookup(%s) = %d, %v; want %d", id, j, ok, want)
		}
	}
	if j, ok := x.lookup(h, "D", stories); ok {
		t.Errorf("lookup(D) = %d", j)
	}
}

// TestValidateHashesFromDecoder checks the index built from the hashes
// the decoder took, in both halves of a long list: every story is found,
// and a duplicate or unknown id in either half is told.
func TestValidateHashesFromDecoder(t *testing.T) {
	defer func(n int) { splitMin = n }(splitMin)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	splitMin = 64
	file := func(ids, deps []string) []byte {
		b := []byte(`{"project": "P", "userStories": [`)
		for i, id := range ids {
			if i > 0 {
				b = append(b, ',')
			}
			dep := ""
			if deps[i] != "" {
				dep = strconv.Quote(deps[i])
			}
			b = fmt.Appendf(b, "\n    {\n      \"id\": %q,\n      \"title\": \"t\",\n      \"dependsOn\": [%s]\n    }", id, dep)
		}
		return append(b, "]}\n"...)
	}
	var ids, deps []string
	for i := range 40 {
		ids = append(ids, fmt.Sprintf("US-%02d", i))
		deps = append(deps, fmt.Sprintf("US-%02d", (i+1)%40))
	}
	deps[39] = "US-00" // and each depends on the next
	f, err := Parse(file(ids, deps), "prd.json")
	if err == nil || !strings.Contains(err.Error(), "dependsOn cycle") {
		t.Fatalf("Parse of a cycle through both halves: %v", err)
	}
	deps[39] = ""
	if f, err = Parse(file(ids, deps), "prd.json"); err != nil {
		t.Fatal(err)
	}
	for i, s := range f.Stories {
		if got := f.Story(s.ID); got != s {
			t.Errorf("Story(%s) = %v, want userStories[%d]", s.ID, got, i)
		}
	}
	ids[35] = "US-02"
	deps[36] = "US-99"
	_, err = Parse(file(ids, deps), "prd.json")
	for _, want := range []string{`userStories[35]: duplicate id "US-02" (first at userStories[2])`, `US-36: dependsOn names unknown story "US-99"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse: %v\nwant it to say %s", err, want)
		}
	}
}
