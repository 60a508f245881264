package loop

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ralph-harness/ralph/internal/readbuf"
	"github.com/ralph-harness/ralph/prd"
	"github.com/ralph-harness/ralph/progress"
)

// The guard's copies live in ralph's memory: a ralph killed while the agent
// runs (by the agent, say, which is its child) takes them with it, and what
// the agent changed would stand. So the iteration's marker also keeps a
// digest of each thing the guard watches, as the agent found it: harness.toml,
// prd.json's judged part (see judgedDigest) and each protected file. The
// next `ralph loop` compares them with the files before it records the
// iteration, and stops for a person when they differ: it cannot put back
// what it has no copy of, nor tell the agent's change from one a person
// made after the kill. A test file is not among them: the agent may change
// one, and the ratchet's count, kept in the ledger, catches fewer tests.

// digestLen is how many hex digits of a SHA-256 the marker keeps: 64 bits,
// far past what an agent could match by trying.
const digestLen = 16

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:digestLen/2])
}

// digest is a guarded file's: its contents, or where it links to.
func (st fileState) digest() string {
	if st.mode&fs.ModeSymlink != 0 {
		return digestOf([]byte("link to " + st.link))
	}
	return hex.EncodeToString(st.sum[:digestLen/2])
}

// judgedDigest is a digest of what of prd.json only the judge may change and
// could make a story pass on less, or the loop end with work undone: which
// stories there are, which pass, and their checks. The running story's pass
// is left out: the next ralph undoes it anyway when no entry vouches for it
// (see resumeInFlight). (A story a person added or reset while the agent
// ran changes it too: after a kill, they are asked.)
func judgedDigest(f *prd.File, running string) string {
	// By id: the order of the stories is a person's to change. A file
	// mostly has them in that order already, which costs no sort.
	stories := f.Stories
	byID := func(a, b *prd.Story) int { return strings.Compare(a.ID, b.ID) }
	if !slices.IsSortedFunc(stories, byID) {
		stories = slices.SortedFunc(slices.Values(stories), byID)
	}
	// Each string with its length before it: no two lists of stories
	// and checks write the same bytes.
	h := sha256.New()
	var b []byte
	text := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, s := range stories {
		b = b[:0]
		text(s.ID)
		passes := byte(0)
		if s.Passes && s.ID != running {
			passes = 1
		}
		b = append(b, passes)
		b = binary.AppendUvarint(b, uint64(len(s.Checks)))
		for _, c := range s.Checks {
			text(c)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:digestLen/2])
}

// guardedSums are the digests the marker keeps: harness.toml's (when it
// was read), prd.json's judged part (when it was parsed), and the
// protected files', by name; in a git work tree, each protected file's
// entry in git's index too (see indexSum).
func guardedSums(harness []byte, harnessRead bool, f *prd.File, running string, files fileSnapshot) []progress.Sum {
	var sums []progress.Sum
	if harnessRead {
		sums = append(sums, progress.Sum{Name: HarnessFile, Digest: digestOf(harness)})
	}
	if f != nil {
		sums = append(sums, progress.Sum{Name: PRDFile, Digest: judgedDigest(f, running)})
	}
	names := slices.Sorted(maps.Keys(files.protected))
	for _, name := range names {
		st := files.protected[name]
		sums = append(sums, progress.Sum{Name: sumName(name), Digest: st.digest()})
		if files.inGit {
			sums = append(sums, progress.Sum{Name: sumName(name) + indexSum, Digest: digestOf([]byte(st.index))})
		}
	}
	return sums
}

// indexSum ends the name of the digest of a protected file's entry in
// git's index (its mode and object, or none): an agent that took the file
// out of the index (git rm --cached), had git ignore it and committed
// leaves its contents as they were, and the history CI runs without it.
// A marker an older ralph wrote has none, and none is compared then (see
// changedSince).
const indexSum = " (git's index)"

// sumName is a file's name as a marker's line and ralph's messages show it:
// quoted when it holds a newline or another control character, which the
// line would not keep (or a terminal would act on).
func sumName(name string) string {
	if progress.Clean(name) != name || strings.Contains(name, "\n") {
		return strconv.Quote(name)
	}
	return name
}

// guardedNow are the digests of guardedSums, taken of the files as they are
// now, and the snapshot of the project's files they were taken of. A file
// that cannot be read (or prd.json parsed) has none.
func (o *Options) guardedNow(ctx context.Context, running string) ([]progress.Sum, fileSnapshot, error) {
	files, err := takeFiles(ctx, o, false, nil)
	if err != nil {
		return nil, files, err
	}
	harness, herr := readbuf.ReadFile(nil, o.path(HarnessFile))
	var f *prd.File
	if data, err := readbuf.ReadFile(nil, o.path(PRDFile)); err == nil {
		f, _ = prd.Parse(data, PRDFile)
	}
	return guardedSums(harness, herr == nil, f, running, files), files, nil
}

// stagedAsOnDisk are the names of the index digests (see indexSum) of the
// protected files of files whose entries in git's index are the files as
// they are on disk: staged by git add, or by ralph's own commit, which the
// guard takes for no tampering. An entry that changed so, its file's
// contents as the marker had them, is no change a kill hid.
func (o *Options) stagedAsOnDisk(files fileSnapshot) map[string]bool {
	staged := map[string]bool{}
	for name, st := range files.protected {
		if st.index != "" && onDisk(o.Dir, name, st, st.index) {
			staged[sumName(name)+indexSum] = true
		}
	}
	return staged
}

// changedSince names what the guard watches that is not as m's marker
// recorded it: changed, gone (or unreadable), or a protected file that is
// new. A marker that recorded nothing (one written before ralph kept
// digests, or before its snapshot failed) finds nothing.
func (o *Options) changedSince(ctx context.Context, m *progress.Mark) ([]string, error) {
	if len(m.Guarded) == 0 {
		return nil, nil
	}
	now, files, err := o.guardedNow(ctx, m.StoryID)
	if err != nil {
		return nil, fmt.Errorf("compare the files ralph guards with iteration %d's marker: %w", m.Iteration, err)
	}
	recorded := map[string]string{}
	index := false // the marker keeps the index's digests
	for _, g := range m.Guarded {
		recorded[g.Name] = g.Digest
		index = index || strings.HasSuffix(g.Name, indexSum)
	}
	was := maps.Clone(recorded) // less those found
	contents := map[string]string{}
	for _, g := range now {
		contents[g.Name] = g.Digest
	}
	var staged map[string]bool
	var changed []string
	for _, g := range now {
		if !index && strings.HasSuffix(g.Name, indexSum) {
			continue
		}
		if file, ok := strings.CutSuffix(g.Name, indexSum); ok && recorded[g.Name] != g.Digest && recorded[file] == contents[file] {
			// The person's edit, or a new check, staged as it is on
			// disk: the guard in the run would have let it be.
			if staged == nil {
				staged = o.stagedAsOnDisk(files)
			}
			if staged[g.Name] {
				delete(was, g.Name)
				continue
			}
		}
		if d, ok := was[g.Name]; !ok {
			changed = append(changed, g.Name+" (new)")
		} else if d != g.Digest {
			changed = append(changed, g.Name)
		}
		delete(was, g.Name)
	}
	for name := range was {
		changed = append(changed, name+" (gone or unreadable)")
	}
	slices.Sort(changed)
	return changed, nil
}
