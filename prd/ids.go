package prd

import (
	"hash/maphash"
	"math/bits"
)

// idIndex finds the first story with an id: a table of open addressing
// keyed by the ids' hashes, which holds no string. Hashing an id of a
// large file where validate meets it is a miss of the cache for each, as
// its text lies anywhere in megabytes; the decoder hashes each id as it
// reads it instead (see idHashes), and the index is built from the hashes
// alone. An id is read again only to confirm a story found, rarely more
// than once for each lookup.
//
// An index is built once and then only read: a memo and the files it
// hands out share it.
type idIndex struct {
	// slots holds, at the slot an id's hash leads to or the first free
	// one after it, the hash's high half and 1 + its story's index; 0 in
	// a free slot.
	slots []uint64
}

// idSeed seeds the hashes of ids; each run has its own.
var idSeed = maphash.MakeSeed()

// idHash returns the hash an idIndex knows id by.
func idHash(id string) uint64 { return maphash.String(idSeed, id) }

// newIDIndex returns an empty index with room for n stories: at least
// half as many slots again, so that a lookup seldom goes past a slot or
// two.
func newIDIndex(n int) *idIndex {
	size := 1 << bits.Len(uint(max(n+n/2, 7)))
	return &idIndex{slots: make([]uint64, size)}
}

// add records that stories[i], whose id hashes to h, has its id, unless a
// story before it has the same id: then it returns that story's index and
// false, and the index is unchanged.
func (x *idIndex) add(h uint64, i int, stories []*Story) (int, bool) {
	p, j, found := x.probe(h, stories[i].ID, stories)
	if found {
		return j, false
	}
	x.slots[p] = h&^slotIndex | uint64(i+1)
	return i, true
}

// lookup returns the index of the first story of stories with the given
// id, whose hash is h, if the index holds it. stories are the ones it was
// built for, or a file's that may have changed since: a story found is
// one with the id, at the index the index knows.
func (x *idIndex) lookup(h uint64, id string, stories []*Story) (int, bool) {
	if x == nil {
		return 0, false
	}
	_, j, found := x.probe(h, id, stories)
	return j, found
}

// slotIndex is the part of a slot that holds 1 + a story's index; the
// rest holds the high half of its id's hash.
const slotIndex = 1<<32 - 1

// probe looks for id, whose hash is h, from the slot h leads to: it
// returns the index j of the story of stories with it and true, or the
// free slot p where the id would go and false.
func (x *idIndex) probe(h uint64, id string, stories []*Story) (p uint64, j int, found bool) {
	mask := uint64(len(x.slots) - 1)
	for p = h & mask; ; p = (p + 1) & mask {
		e := x.slots[p]
		if e == 0 {
			return p, 0, false
		}
		j = int(e&slotIndex) - 1
		if e&^slotIndex == h&^slotIndex && j < len(stories) && stories[j].ID == id {
			return p, j, true
		}
	}
}

// idHashes are the hashes of a file's ids, taken by the decoder as it
// read them: of each story's id, in the story (idHash), and of the ids each
// story depends on, story after story.
type idHashes struct {
	deps []uint64
}

// take hashes the ids of s, the next story.
func (h *idHashes) take(s *Story) {
	s.idHash = idHash(s.ID)
	for _, dep := range s.DependsOn {
		h.deps = append(h.deps, idHash(dep))
	}
}

// join adds the hashes of the stories after those of h.
func (h *idHashes) join(after *idHashes) {
	h.deps = append(h.deps, after.deps...)
}
