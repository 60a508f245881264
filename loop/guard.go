package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/ralph-harness/ralph/internal/atomicfile"
	"github.com/ralph-harness/ralph/internal/readbuf"
	"github.com/ralph-harness/ralph/prd"
	"github.com/ralph-harness/ralph/progress"
)

// maxLedgerCopy bounds the progress.txt the guard keeps whole; past it, only
// appends are caught (a longer ledger costs too much to read every time).
const maxLedgerCopy = 8 << 20

// guardLedger compares progress.txt with the copy taken before the agent
// ran. The head is the people's: a change there is kept, unless it takes
// the head past its bound (see headBound). The ledger is ralph's: what the
// agent appended is removed, and history it rewrote is put back. It
// returns a line for each change undone.
func (s snapshot) guardLedger(o *Options, who string) ([]string, error) {
	path := o.path(ProgressFile)
	b := o.buffers()
	now, err := readbuf.ReadFile(b.now, path)
	b.now = now
	if err != nil {
		// Removed or made unreadable: the copy goes back whole.
		if err := atomicfile.Write(path, s.progress, 0o644); err != nil {
			return nil, err
		}
		return []string{ProgressFile + ": " + who + " removed it or made it unreadable; ralph restored it"}, nil
	}
	if bytes.Equal(now, s.progress) {
		return nil, nil
	}
	oldHead, oldLedger := progress.SplitHead(s.progress)
	newHead, newLedger := progress.SplitHead(now)
	var found []string
	switch {
	case !bytes.HasPrefix(newLedger, oldLedger):
		found = append(found, ProgressFile+": "+who+" rewrote the ledger's history; ralph restored it")
	case len(newLedger) > len(oldLedger):
		found = append(found, fmt.Sprintf("%s: %s appended to it; ralph removed the %d bytes (the ledger is ralph's)", ProgressFile, who, len(newLedger)-len(oldLedger)))
	}
	// The head the file keeps: today's; a plain append, cut off, leaves
	// it as it was, and a rebuild takes it as HeadAround finds it.
	head := newHead
	switch {
	case len(found) == 0:
	case bytes.HasPrefix(now, s.progress):
		head = oldHead
	default:
		head = progress.HeadAround(now, oldLedger)
	}
	if bound := headBound(oldHead); len(head) > bound && !bytes.Equal(head, oldHead) {
		found = append(found, fmt.Sprintf("%s: %s made the head (the notes before the ledger) %d bytes long, past the %d it may have; ralph put it back as it was", ProgressFile, who, len(head), bound))
		head = oldHead
	}
	if len(found) == 0 {
		return nil, nil // only the head changed, within its bound: a person's notes
	}
	if bytes.HasPrefix(now, s.progress) {
		// The common case, a plain append: cut it off in place.
		if err := os.Truncate(path, int64(len(s.progress))); err != nil {
			return nil, fmt.Errorf("restore %s: %w", ProgressFile, err)
		}
		return found, nil
	}
	// Otherwise the file is rebuilt: the head it keeps, the ledger as it
	// was.
	restored := s.progress
	if !bytes.Equal(head, oldHead) {
		restored = append(head, oldLedger...) // head is HeadAround's own
	}
	if err := atomicfile.Write(path, restored, 0o644); err != nil {
		return nil, err
	}
	return found, nil
}

// headBound is how long the agent may make the head of progress.txt, head
// before it ran: as long as the prompt takes of it (maxHead), or as long as
// it was, when a person made it longer. The guard keeps the ledger's
// history only while the file is small enough to copy (maxLedgerCopy): a
// head the agent grew without bound would take the file past that, and
// history it rewrote in a later iteration would go unseen.
func headBound(head []byte) int { return max(maxHead, len(head)) }

// guardWindow is how much of the end of progress.txt the guard remembers
// to tell an append from an edit elsewhere in the file.
const guardWindow = 4 << 10

// buffers are what an iteration reads the three files into, kept from one
// iteration to the next (see package readbuf).
type buffers struct {
	prd, harness, progress []byte // a snapshot's copies
	now                    []byte // a file as it is now, to compare with its copy
}

func (o *Options) buffers() *buffers {
	if o.bufs == nil {
		o.bufs = new(buffers)
	}
	return o.bufs
}

// snapshot is what the agent may not change, taken just before it runs.
type snapshot struct {
	prd []byte
	// parsed is a File known to be parsed from prd (see begin), which the
	// guard need not compare with it again; nil when none is.
	parsed     *prd.File
	harness    []byte
	harnessErr error
	// progress is the whole of progress.txt when it is small enough to keep
	// (maxLedgerCopy), so that a rewrite of the ledger's history is seen
	// and undone, not only an append; of a larger one, only its size and
	// its end are kept.
	progress     []byte
	progressSize int64
	progressEnd  []byte
	// places are the three files as Lstat saw them, in ownFiles' order:
	// a file turned into a link must not be restored through the link.
	places [len(ownFiles)]*fileState // nil where there was none
	files  fileSnapshot
}

// ownFiles are the three files, whose places the guard keeps.
var ownFiles = [...]string{PRDFile, HarnessFile, ProgressFile}

// takeSnapshot is what the guard compares with afterwards: the three files
// and the project's guarded files (see takeFiles for tests).
func takeSnapshot(ctx context.Context, o *Options, tests bool) (snapshot, error) {
	s, err := takeWatched(ctx, o, nil, tests, nil)
	if err != nil {
		return s, err
	}
	return s, s.takeProgress(o)
}

// takeWatched is takeSnapshot but for progress.txt's copy (see
// takeProgress): an iteration takes that after its marker, which keeps
// digests of the rest (see guardedSums). text is takeOwn's.
func takeWatched(ctx context.Context, o *Options, text []byte, tests bool, listed []fileInfo) (snapshot, error) {
	files, err := takeFiles(ctx, o, tests, listed)
	if err != nil {
		return snapshot{}, err
	}
	s, err := takeOwn(o, text)
	s.files = files
	return s, err
}

// takeState is the three files' part of a snapshot.
func takeState(o *Options) (snapshot, error) {
	s, err := takeOwn(o, nil)
	if err != nil {
		return s, err
	}
	return s, s.takeProgress(o)
}

// takeOwn is takeState but for progress.txt's copy. text, when not nil,
// is prd.json's, read into the snapshot's buffer under the lock the caller
// still holds (see readStories): kept as it is, not read again. To the
// guard, a person's editor that saved the file since then saved it while
// the agent ran: the guard keeps what a person may change.
func takeOwn(o *Options, text []byte) (snapshot, error) {
	var s snapshot
	var err error
	for i, name := range ownFiles {
		if st, ok := placeOf(o.path(name)); ok {
			s.places[i] = &st
		}
	}
	// The copies go into the last iteration's buffers: that snapshot is
	// done with.
	b := o.buffers()
	s.prd = text
	if text == nil {
		s.prd, err = readbuf.ReadFile(b.prd, o.path(PRDFile))
		b.prd = s.prd
		if err != nil {
			return s, fmt.Errorf("read %s: %w", PRDFile, err)
		}
	}
	s.harness, s.harnessErr = readbuf.ReadFile(b.harness, o.path(HarnessFile))
	b.harness = s.harness
	return s, nil
}

// takeProgress is progress.txt's part of a snapshot.
func (s *snapshot) takeProgress(o *Options) error {
	b := o.buffers()
	path := o.path(ProgressFile)
	info, err := os.Stat(path)
	switch {
	case err != nil:
	case info.Size() <= maxLedgerCopy:
		s.progress, err = readbuf.ReadFile(b.progress, path)
		b.progress = s.progress
	default:
		s.progressSize, s.progressEnd, err = fileEnd(path, -1)
	}
	return err
}

// fileEnd returns a file's size and its last guardWindow bytes before
// offset at (the end when at < 0).
func fileEnd(path string, at int64) (int64, []byte, error) {
	f, err := readbuf.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, nil, err
	}
	size := info.Size()
	if at < 0 || at > size {
		at = size
	}
	start := max(0, at-guardWindow)
	buf := make([]byte, at-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return 0, nil, err
	}
	return size, buf, nil
}

// Who the guard names as having made a change it undoes: the agent; the
// checks after it, which run the project's code, tests the agent wrote
// included; or git in ralph's commits, which runs the programs its
// configuration names (a clean filter, a signing program), and the agent
// can write that configuration.
const (
	byAgent  = "the agent"
	byChecks = "the checks"
	byGit    = "a program git ran"
)

// guardAfter undoes what who, the checks or git after the agent, changed
// of the three files and the protected files that the agent may not change
// either, and removes the protected files who created: a test can write
// files as well as the agent that wrote it, and a check whose script
// changed under it proves nothing. That holds for
// harness.toml too, which the loop reads again before the next iteration:
// a test that rewrote its checks would pass the story then. It puts back
// the test files who deleted too, as the agent's guard does: a teardown
// or a conftest.py the agent wrote can delete one as well as the agent.
// read is prd.json as the guard left it for the judge, if known. The
// project's other files are left alone: they cost a listing to compare,
// and are the agent's to change anyway.
func (s snapshot) guardAfter(ctx context.Context, o *Options, ledger *progress.Ledger, read *prd.File, storyID, who string) (*prd.File, []string, error) {
	return s.guardWith(o, ledger, read, storyID, who, func() ([]string, error) { return s.files.guardAfter(ctx, o, who) })
}

// guardWith is the guards' one order: the three files' places, prd.json,
// the project's files (by files, which differs from the agent's guard to
// the others'), harness.toml, progress.txt. It returns prd.json as the
// judge must read it and a line for each change undone.
func (s snapshot) guardWith(o *Options, ledger *progress.Ledger, read *prd.File, storyID, who string, files func() ([]string, error)) (*prd.File, []string, error) {
	tampered, err := s.guardPlaces(o, who)
	if err != nil {
		return nil, nil, err
	}
	f, more, err := s.guardPRD(o, read, storyID, who)
	if err != nil {
		return nil, nil, err
	}
	tampered = append(tampered, more...)
	found, err := files()
	if err != nil {
		return nil, nil, err
	}
	tampered = append(tampered, found...)
	note, err := s.guardHarness(o, who)
	if err != nil {
		return nil, nil, err
	}
	if note != "" {
		tampered = append(tampered, note)
	}
	notes, err := s.guardProgress(o, ledger, who)
	if err != nil {
		return nil, nil, err
	}
	tampered = append(tampered, notes...)
	return f, tampered, nil
}

// underGit runs fn, which runs git, and undoes what the programs git ran
// (a clean filter, a signing program: the agent can name them in git's
// configuration) changed of the three files and the protected files,
// warning of each: a clean filter could mark stories passing after their
// verdicts, say. files are the protected files as they must stay; nil
// takes them as they are now. storyID is the iteration's story, if any.
// It returns the lines for the ledger.
func (o *Options) underGit(ctx context.Context, ledger *progress.Ledger, files *fileSnapshot, storyID string, fn func()) ([]string, error) {
	var before snapshot
	var err error
	if files != nil {
		// Into the buffers of the iteration's snapshot, which is done
		// with by the time ralph commits.
		before, err = takeState(o)
		before.files = *files
	} else {
		before, err = takeSnapshot(ctx, o, false)
	}
	if err != nil {
		return nil, err
	}
	fn()
	// As the agent's guard: what git's programs changed is undone however
	// the run ends.
	_, undone, err := before.guardAfter(context.WithoutCancel(ctx), o, ledger, nil, storyID, byGit)
	for _, t := range undone {
		o.warn("%s", t)
	}
	return undone, err
}

// guarded is what the guard leaves for the judge.
type guarded struct {
	// prd is prd.json as the judge must read it: the stories and checks
	// as they were before the agent ran.
	prd *prd.File
	// tampered describes each change the guard undid, a line each.
	tampered []string
	// changed are the project's files the agent added, changed or
	// removed, by name.
	changed []string
	// files is the project as the guard listed it after the agent, when
	// it put nothing back: the next snapshot may take it (see
	// iteration.listing).
	files []fileInfo
}

// guard undoes what the agent changed that it may not. Changes a person may
// have made meanwhile (an answer to another story's question, a new story,
// notes) are kept. read is prd.json as the iteration read it before the
// agent ran: the judge's copy when the snapshot found the text read was
// parsed from, and the agent left it so.
func (s snapshot) guard(ctx context.Context, o *Options, ledger *progress.Ledger, read *prd.File, storyID string) (guarded, error) {
	var (
		changed []string
		files   []fileInfo
	)
	f, tampered, err := s.guardWith(o, ledger, read, storyID, byAgent, func() (found []string, err error) {
		found, changed, files, err = s.files.guard(ctx, o)
		if len(found) > 0 {
			files = nil // what the guard put back or removed is not in it
		}
		return found, err
	})
	return guarded{prd: f, tampered: tampered, changed: changed, files: files}, err
}

// guardHarness puts harness.toml back as it was when who began, if who
// changed or removed it, and says so.
func (s snapshot) guardHarness(o *Options, who string) (string, error) {
	if s.harnessErr != nil {
		return "", nil
	}
	b := o.buffers()
	now, err := readbuf.ReadFile(b.now, o.path(HarnessFile))
	b.now = now
	if err == nil && bytes.Equal(now, s.harness) {
		return "", nil
	}
	if err := atomicfile.Write(o.path(HarnessFile), s.harness, 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: %s changed it; ralph restored the file", HarnessFile, who), nil
}

// guardPlaces takes away what who put in place of any of the three files
// (a link, a directory) or a link of the person's that who pointed
// elsewhere, and makes the person's link again: the guards of their
// contents then restore them where they belong, not where who pointed.
func (s snapshot) guardPlaces(o *Options, who string) ([]string, error) {
	var found []string
	for i, name := range ownFiles {
		was := s.places[i]
		now, ok := placeOf(o.path(name))
		// A removed file's contents are put back by the guards of them.
		if was == nil || !ok || was.samePlace(now) {
			continue
		}
		if err := os.RemoveAll(o.path(name)); err != nil {
			return nil, fmt.Errorf("restore %s: %w", name, err)
		}
		if was.mode&fs.ModeSymlink != 0 {
			if err := os.Symlink(was.link, o.path(name)); err != nil {
				return nil, fmt.Errorf("restore %s: %w", name, err)
			}
		}
		found = append(found, fmt.Sprintf("%s: %s put something else in its place; ralph took it away", name, who))
	}
	return found, nil
}

func (s snapshot) guardPRD(o *Options, read *prd.File, storyID, who string) (*prd.File, []string, error) {
	path := o.path(PRDFile)
	b := o.buffers()
	after, err := readbuf.ReadFile(b.now, path)
	b.now = after
	unchanged := err == nil && bytes.Equal(s.prd, after)
	// Around git (read is nil), nobody asks for the file: an unchanged
	// one is not parsed.
	if unchanged && (read == nil || read == s.parsed || read.ParsedFrom(s.prd)) {
		return read, nil, nil
	}
	orig, perr := prd.Parse(s.prd, PRDFile)
	restoreAll := func(what string) (*prd.File, []string, error) {
		if err := atomicfile.Write(path, s.prd, 0o644); err != nil {
			return nil, nil, err
		}
		return orig, []string{fmt.Sprintf("%s: %s %s; ralph restored the file", PRDFile, who, what)}, nil
	}
	switch {
	case perr != nil && read == nil:
		// Broken before git ran (by a person, while the loop waited):
		// it can only go back to what it was.
		return restoreAll("changed it")
	case perr != nil:
		return nil, nil, &InputError{Err: perr}
	case unchanged:
		return orig, nil, nil
	}
	if err != nil {
		return restoreAll("removed it or made it unreadable")
	}
	if _, err := prd.Parse(after, PRDFile); err != nil {
		line, _, _ := strings.Cut(err.Error(), "\n")
		return restoreAll("broke it (" + line + ")")
	}
	// The rest is undone change by change, on the file as it is under the
	// lock of a person's `ralph task` edits: those, made while the agent
	// ran, are kept.
	var (
		fixed   *prd.File
		changes []string
	)
	err = prd.Update(path, PRDFile, nil, func(cur *prd.File) error {
		fixed, changes = cur, undoTampering(orig, cur, storyID)
		if len(changes) == 0 {
			return prd.ErrUnchanged
		}
		// When nothing else changed (the agent rewrote the file to tamper
		// with it, say), the text goes back as the person wrote it, laid
		// out and ordered as it was.
		if text, err := cur.Marshal(); err == nil && sameJSON(text, s.prd) {
			fixed = orig
			if err := atomicfile.Write(path, s.prd, 0o644); err != nil {
				return err
			}
			return prd.ErrUnchanged
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if len(changes) == 0 {
		return fixed, nil, nil
	}
	return fixed, []string{fmt.Sprintf("%s: %s %s; ralph undid that", PRDFile, who, strings.Join(changes, ", "))}, nil
}

// sameJSON reports whether a and b hold the same JSON values, whatever
// their layout and the order of their members.
func sameJSON(a, b []byte) bool {
	va, erra := decodeJSON(a)
	vb, errb := decodeJSON(b)
	return erra == nil && errb == nil && reflect.DeepEqual(va, vb)
}

func decodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// undoTampering puts back in cur, prd.json after the agent ran, what the
// agent may not change of orig, prd.json before: the running story's
// status and answers, any story's checks and passing, any story. It says
// what it put back, a phrase a change. Anything else is kept, as it may be
// a person's. Another story's checks are the judge's as much as the
// running story's: an agent that weakened them now would have that story
// pass on less later. A story new in cur (added, or another's renamed) is
// kept, as `ralph task add` would have added it, but its status is judged
// as that of a story that was new before: one added passing, failed or
// with attempts counted is set back to none.
func undoTampering(orig, cur *prd.File, storyID string) []string {
	var changes []string
	for i, was := range orig.Stories {
		now := cur.Story(was.ID)
		if now == nil {
			changes = append(changes, "removed story "+was.ID)
			cur.Stories = slices.Insert(cur.Stories, min(i, len(cur.Stories)), was)
			continue
		}
		running := was.ID == storyID
		switch {
		case running && now.Status() != was.Status():
			changes = append(changes, "changed the status of "+was.ID)
			now.SetStatus(was.Status())
		case !running:
			if what := undoOther(was.ID, was.Status(), now); what != "" {
				changes = append(changes, what)
			}
		}
		if !slices.Equal(now.Checks, was.Checks) {
			changes = append(changes, "changed the checks of "+was.ID)
			now.Checks = was.Checks
		}
		if running && !slices.Equal(now.Answers, was.Answers) {
			changes = append(changes, "changed the answers of "+was.ID)
			now.Answers = was.Answers
		}
	}
	for _, now := range cur.Stories {
		if orig.Story(now.ID) == nil {
			if what := undoOther("new story "+now.ID, prd.Status{}, now); what != "" {
				changes = append(changes, what)
			}
		}
	}
	return changes
}

// undoOther puts back the status of now, a story the agent does not work
// on, named name, when the agent changed it from was as only the judge may,
// and says what it put back.
func undoOther(name string, was prd.Status, now *prd.Story) string {
	var what string
	switch {
	case now.Passes && !was.Passes:
		what = "marked " + name + " as passing"
	case judgedOnly(was, now.Status()):
		what = "changed the status of " + name
	default:
		return ""
	}
	now.SetStatus(was)
	return what
}

// judgedOnly reports whether a story's status went from was to now in a way
// only the judge changes it: failed, its attempts counted, its pass taken
// away without a reset. Anything else may be a person's, made while the
// agent ran: a reset, a question asked or answered (`ralph task`), a
// failure cleared by hand.
func judgedOnly(was, now prd.Status) bool {
	reset := now.Attempts == 0 && now.Failed == ""
	return now.Failed != "" && now.Failed != was.Failed ||
		now.Attempts > was.Attempts ||
		was.Passes && !now.Passes && !reset
}

// guardProgress undoes what the agent did to progress.txt, kept whole (see
// guardLedger): the ledger is ralph's alone. Past maxLedgerCopy, only an
// append is removed, and a file the agent removed put back from the one
// the ledger holds open; a change anywhere else may be a person editing
// the head, and is only warned of. It returns a line for each change
// undone.
func (s snapshot) guardProgress(o *Options, ledger *progress.Ledger, who string) ([]string, error) {
	if s.progress != nil {
		return s.guardLedger(o, who)
	}
	path := o.path(ProgressFile)
	size, end, err := fileEnd(path, s.progressSize)
	removed := errors.Is(err, fs.ErrNotExist)
	if removed {
		if _, err := ledger.Follow(); err != nil {
			return nil, fmt.Errorf("restore %s: %w", ProgressFile, err)
		}
		size, end, err = fileEnd(path, s.progressSize)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case size == s.progressSize && bytes.Equal(end, s.progressEnd) && !removed:
		return nil, nil
	case size >= s.progressSize && bytes.Equal(end, s.progressEnd):
		if size > s.progressSize {
			if err := os.Truncate(path, s.progressSize); err != nil {
				return nil, fmt.Errorf("restore %s: %w", ProgressFile, err)
			}
		}
		if removed {
			return []string{ProgressFile + ": " + who + " removed it; ralph restored it"}, nil
		}
		return []string{fmt.Sprintf("%s: %s appended to it; ralph removed the %d bytes (the ledger is ralph's)", ProgressFile, who, size-s.progressSize)}, nil
	}
	o.warn("%s changed during the iteration, not at its end: if the agent did it, check the ledger", ProgressFile)
	return nil, nil
}
