package progress

import "bytes"

// Head is an entry of the ledger as its start marker tells it: enough to
// find the entry wanted among many without parsing the others.
type Head struct {
	Iteration int
	StoryID   string
	Outcome   string
	seg       []byte // the entry's text
}

// Entry parses the whole entry.
func (h Head) Entry() Entry {
	e, _ := parseSegment(h.seg)
	return e
}

// TailHeads walks the complete entries of the file at path backwards from
// the end, newest first, as TailFunc does, but reads only their start
// markers: fn gets each entry's Head and parses the entry itself if it
// wants it. It stops when fn returns false or maxBytes of the file have been
// read (0: no bound). A missing file holds no entries.
func TailHeads(path string, maxBytes int64, fn func(Head) bool) error {
	return walkBack(path, maxBytes, blockSize, func(seg []byte) bool {
		line := seg
		if nl := bytes.IndexByte(seg, '\n'); nl >= 0 {
			line = seg[:nl]
		}
		n, id, outcome, ok := parseStart(trimEOL(string(line)))
		if _, whole := afterEnd(seg, n); !ok || !whole {
			return true // torn: skipped, as TailFunc skips it
		}
		return fn(Head{Iteration: n, StoryID: id, Outcome: outcome, seg: seg})
	})
}

// afterEnd finds, in seg (the text of entry number n from its start marker
// on), the entry's end marker on a line of its own, so that parseSegment
// finds the entry whole, and returns what follows that line.
func afterEnd(seg []byte, n int) (rest []byte, ok bool) {
	var room [64]byte
	needle := appendEndMarker(append(room[:0], '\n'), n)
	for {
		i := bytes.Index(seg, needle)
		if i < 0 {
			return nil, false
		}
		// A line ends in "\n", "\r\n", or the end of the text; trimEOL
		// drops one "\r".
		rest := bytes.TrimPrefix(seg[i+len(needle):], []byte("\r"))
		switch {
		case len(rest) == 0:
			return nil, true
		case rest[0] == '\n':
			return rest[1:], true
		}
		seg = seg[i+1:]
	}
}
