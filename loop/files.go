package loop

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"iter"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ralph-harness/ralph/internal/glob"
	"github.com/ralph-harness/ralph/internal/proc"
	"github.com/ralph-harness/ralph/internal/readbuf"
	"github.com/ralph-harness/ralph/internal/sticky"
)

// Guard says which files of the project the agent may not touch.
type Guard struct {
	// Protect are globs of files the agent may not create, change or
	// delete; a change is undone.
	Protect []string
	// Tests are globs of test files: the agent may add them, not delete
	// them (the test ratchet).
	Tests []string
}

// DefaultTests are the test files of the usual languages.
var DefaultTests = []string{
	"**/*_test.go",
	"**/test_*.py", "**/*_test.py",
	"**/*.test.js", "**/*.test.ts", "**/*.test.jsx", "**/*.test.tsx", "**/*.test.mjs",
	"**/*.spec.js", "**/*.spec.ts", "**/*.spec.jsx", "**/*.spec.tsx",
	"**/__tests__/**",
	"**/*_spec.rb", "**/*Test.java", "**/*Tests.cs",
	"tests/**",
}

// maxKept bounds the bytes of protected and test files kept to put them
// back; past it, a file is still guarded, and a change is undone from git's
// copy of the file if it has one as it was (see restoreBlob), else the
// story is set aside for a person (see lostEnd).
const maxKept = 32 << 20

// fileState is one guarded file before the agent ran: a regular file's
// sum and contents, or where a symbolic link pointed. A file that becomes
// a link (or a link that points elsewhere) has changed, whatever the link
// leads to: the agent could point it at anything, outside the project too.
type fileState struct {
	sum    [32]byte
	summed bool        // sum is set: a protected file's, guarded whole
	data   []byte      // nil past maxKept
	size   int64       // a regular file's
	mode   fs.FileMode // Lstat's: its type and permissions
	link   string      // the target, when mode says a symbolic link
	// blob is git's copy of a file kept without its data, as the index
	// (or else HEAD) had it when the snapshot was taken: an object id, ""
	// for none. Taken then, it is no copy the agent staged or committed.
	blob string
	// index is a guarded file's entry in git's index when the snapshot
	// was taken, its mode and object ("100644 5716ca…"), as the listing
	// had it; "" when git did not track it (or it was in a conflict). An
	// entry taken out since is put back (see guardIndex, guardTests).
	index string
}

// placeOf is what Lstat says is at path, a link's target included; ok is
// false when nothing is.
func placeOf(path string) (st fileState, ok bool) {
	info, err := os.Lstat(path)
	if err != nil {
		return st, false
	}
	st.mode = info.Mode()
	if st.mode&fs.ModeSymlink != 0 {
		st.link, _ = os.Readlink(path)
	}
	return st, true
}

// samePlace reports whether now, what is at a file's place now (see
// placeOf), is what st was: a file, or a link to the same target.
func (st fileState) samePlace(now fileState) bool {
	return now.mode.Type() == st.mode.Type() && now.link == st.link
}

// unchanged reports whether the file at path is still as st says it was.
func (st fileState) unchanged(path string) bool {
	now, ok := placeOf(path)
	if !ok || !st.samePlace(now) || now.mode != st.mode {
		return false
	}
	if st.mode&fs.ModeSymlink != 0 {
		return true
	}
	sum, _, err := sumFile(path)
	return err == nil && sum == st.sum
}

// sumFile returns the sha256 of the file at path, read in pieces (a
// protected file may be larger than what ralph keeps in memory), and its
// size. The guard sums every protected file after the agent, after the
// checks and after ralph's commit, each iteration: the sum reads the bare
// descriptor through a buffer used again (see readbuf.ReadEach), without
// os.Open's five system calls for the poller and io.Copy's fresh 32 kB a
// file. What is not a regular file (a named pipe put in its place, whose
// reading could wait for ever) is an error.
func sumFile(path string) (sum [32]byte, size int64, err error) {
	h := sha256.New()
	size, err = readbuf.ReadEach(path, func(p []byte) { h.Write(p) })
	h.Sum(sum[:0])
	return sum, size, err
}

// fileSnapshot is the guarded files before the agent ran.
type fileSnapshot struct {
	protected map[string]fileState
	tests     map[string]fileState // sum unset (but for protected ones): only a deletion is undone
	// repos are the other git repositories in protected directories (see
	// projectFiles), by name: ralph neither looks inside one nor removes
	// one, but tells of one the agent created or deleted.
	repos map[string]bool
	// special are the named pipes, sockets and devices in protected
	// directories, by name: none is read (a pipe's reading waits for a
	// writer), nor kept, but one the agent created is removed. dirs are
	// the directories looked in for them (see specialFiles).
	special map[string]bool
	dirs    map[string]bool
	work    []fileInfo // workFiles before the agent, for the stall breaker
	// inGit says the listing is git's, with the protected files' entries
	// in git's index (see fileState.index): the marker keeps their
	// digests (see guardedSums). Set only when there are protected files.
	inGit bool
	// untracked are the test files git tracked that the checks took out of
	// git's index and had git ignore (see indexWatch): the guard after
	// them takes them for deleted.
	untracked map[string]bool
	// marks are the files whose entries in git's index were marked (see
	// fileInfo.marks) when the snapshot was taken, by name: a person's
	// marks, which stay. nil when there are none (always, outside git).
	marks map[string]uint8
}

// isSpecial reports whether mode is a named pipe's, a socket's or a
// device's: a file of the project that is not read.
func isSpecial(mode fs.FileMode) bool {
	return mode&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0
}

// inRepo reports whether the file name is inside one of the snapshot's
// repositories, as they were: not a file the guard keeps, and none it
// removes (the agent may have taken the repository's .git away, say).
func (s fileSnapshot) inRepo(name string) bool {
	for i := range len(name) {
		if name[i] == '/' && s.repos[name[:i]] {
			return true
		}
	}
	return false
}

// guardGlobs are the guard's globs, compiled once per harness.toml, and the
// prompt template it names.
type guardGlobs struct {
	tests, protect glob.Set
	// protectDirs are the directories the protect globs name before their
	// first wildcard ("" for the project's root): looked in for named
	// pipes and the like, which git does not list (see specialFiles).
	protectDirs []string
	// protectRoots are where protected files can be (see literalRoots):
	// listed whether git ignores their files or not (see protectedFiles).
	protectRoots []string
	// template is the prompt template's file, relative to the work
	// directory, when it is in it: protected as [guard] protect's files
	// are, for it says what the agent must do and how it replies.
	template string
}

// guardPatterns are the guard's globs as a person writes them, made to
// match the names of the project's files (relative, slash-separated) as
// meant: "./docs/x" and "/docs/x" are "docs/x", and a glob that names a
// directory names the files in it, as in .gitignore ("migrations",
// "migrations/"), whatever else it matches.
func guardPatterns(globs []string) []string {
	out := make([]string, 0, 2*len(globs))
	for _, g := range globs {
		for {
			if t, ok := strings.CutPrefix(g, "./"); ok {
				g = t
			} else if t, ok := strings.CutPrefix(g, "/"); ok {
				g = t
			} else {
				break
			}
		}
		g = strings.TrimRight(g, "/")
		switch {
		case g == "" || g == ".":
			out = append(out, "**") // the whole project
		case g == "**" || strings.HasSuffix(g, "/**"):
			out = append(out, g)
		default:
			out = append(out, g, g+"/**")
		}
	}
	return out
}

// protects reports whether name is a protected file. The three files are
// not, whatever the globs say: ralph writes them itself while the agent
// runs (the marker), and guards them on their own terms (see snapshot).
func (g *guardGlobs) protects(name string) bool {
	return (g.protect.Match(name) || name == g.template) && !slices.Contains(ownFiles[:], name)
}

// none reports whether the guard has no file of the project to keep.
func (g *guardGlobs) none(guard Guard) bool {
	return len(guard.Protect) == 0 && len(guard.Tests) == 0 && g.template == ""
}

// isTest reports whether name is a test file; no more one of the three
// files than a protected file is.
func (g *guardGlobs) isTest(name string) bool {
	return g.tests.Match(name) && !slices.Contains(ownFiles[:], name)
}

func (o *Options) guardGlobs() *guardGlobs {
	if o.globs == nil {
		g := o.Config.Guard
		protect := guardPatterns(g.Protect)
		o.globs = &guardGlobs{tests: glob.Compile(guardPatterns(g.Tests)...), protect: glob.Compile(protect...),
			protectDirs: literalDirs(protect), protectRoots: literalRoots(protect)}
		// Guarded when it is in the work directory.
		if path := o.Config.TemplatePath(o.Dir); path != "" {
			if rel, err := filepath.Rel(o.Dir, path); err == nil && filepath.IsLocal(rel) {
				o.globs.template = filepath.ToSlash(rel)
			}
		}
	}
	return o.globs
}

// takeFiles lists the guarded files, keeping the protected ones' contents,
// and the test files' when tests is set: only the agent's guard puts back
// a deleted test file. listed, when not nil, is the project as the last
// agent's guard listed it, which nothing but ralph's own records changed
// since (see iteration.listing): it is taken rather than listed again.
func takeFiles(ctx context.Context, o *Options, tests bool, listed []fileInfo) (fileSnapshot, error) {
	g := o.Config.Guard
	s := fileSnapshot{protected: map[string]fileState{}, tests: map[string]fileState{}, repos: map[string]bool{},
		special: map[string]bool{}, dirs: map[string]bool{}}
	// The files are listed once before the agent and once after it: the
	// guard and the stall breaker share the listings, and the listing
	// after one agent serves before the next when nothing ran between.
	files, ok := o.relisted(listed)
	if !ok {
		var err error
		if files, err = o.projectFiles(ctx); err != nil {
			return s, err
		}
	}
	s.work = workFiles(files)
	for _, f := range files {
		if f.marks != 0 {
			if s.marks == nil {
				s.marks = map[string]uint8{}
			}
			s.marks[f.name] = f.marks
		}
	}
	globs := o.guardGlobs()
	if globs.none(g) {
		return s, nil
	}
	kept := 0
	// keep reads a guarded file while the budget lasts; a protected file
	// is read past it too, for its sum.
	keep := func(f fileInfo, sum bool) (fileState, bool) {
		path := filepath.Join(o.Dir, f.name)
		st := fileState{mode: f.info.Mode(), size: f.info.Size()}
		if st.mode&fs.ModeSymlink != 0 {
			return placeOf(path)
		}
		if !st.mode.IsRegular() {
			return fileState{}, false // never opened: a named pipe's open waits
		}
		if kept+int(f.info.Size()) > maxKept {
			if sum {
				// Not kept: summed as it is read.
				var err error
				if st.sum, _, err = sumFile(path); err != nil {
					return fileState{}, false // gone meanwhile, or not a file
				}
				st.summed = true
			}
			return st, true
		}
		data, err := readbuf.ReadFile(nil, path)
		if err != nil {
			return fileState{}, false // gone meanwhile, or not a file
		}
		if sum {
			st.sum, st.summed = sha256.Sum256(data), true
		}
		if kept+len(data) <= maxKept {
			st.data = data
			kept += len(data)
		}
		return st, true
	}
	// The protected files first: the tests do not spend their budget.
	for _, f := range files {
		if !globs.protects(f.name) {
			continue
		}
		s.dirs[parentDir(f.name)] = true
		switch {
		case f.info.IsDir():
			s.repos[f.name] = true // another repository: its name only
		case isSpecial(f.info.Mode()):
			s.special[f.name] = true
		default:
			if st, ok := keep(f, true); ok {
				st.index = stageZero(f.index)
				s.protected[f.name] = st
			}
		}
	}
	for _, f := range o.specialFiles(ctx, s.dirs) {
		s.special[f.name] = true
	}
	// The template is kept even when git ignores it, and the listing
	// leaves it out.
	if name := globs.template; name != "" {
		if _, listed := s.protected[name]; !listed {
			if info, err := os.Lstat(filepath.Join(o.Dir, name)); err == nil {
				if st, ok := keep(fileInfo{name: name, info: info}, true); ok {
					s.protected[name] = st
				}
			}
		}
	}
	// Known by the listing, which asked: no git runs for it.
	s.inGit = len(s.protected) > 0 && o.gitTree(ctx)
	// A test file deleted is put back, so that the ratchet holds for the
	// attempts after this one too; only a deletion is looked for.
	for _, f := range files {
		if !tests || !globs.isTest(f.name) {
			continue
		}
		if st, ok := s.protected[f.name]; ok {
			s.tests[f.name] = st
		} else if st, ok := keep(f, false); ok {
			st.index = stageZero(f.index)
			s.tests[f.name] = st
		}
	}
	s.findBlobs(ctx, o)
	return s, nil
}

// findBlobs sets the blob of each guarded file kept without its data: git's
// copy of it, as the index has it, else as HEAD has it. Only a snapshot
// with such a file asks git, which lists the index (and HEAD, if need be)
// whole; a file git has no copy of has none, nor has any when git fails.
func (s *fileSnapshot) findBlobs(ctx context.Context, o *Options) {
	want := map[string]bool{}
	for _, files := range []map[string]fileState{s.protected, s.tests} {
		for name, st := range files {
			if st.data == nil && st.mode.IsRegular() {
				want[name] = true
			}
		}
	}
	if len(want) == 0 || !o.gitTree(ctx) {
		return
	}
	blobs := gitBlobs(ctx, o.Dir, want)
	for _, files := range []map[string]fileState{s.protected, s.tests} {
		for name, st := range files {
			if id, ok := blobs[name]; ok {
				st.blob = id
				files[name] = st
			}
		}
	}
}

// gitBlobs returns the object ids of git's copies of the files want names
// (relative to dir, slash-separated): the index's, else HEAD's. A file in
// git as something else than a file (a link, a submodule), or in the index
// only as a conflict's sides, is left out of the index's.
func gitBlobs(ctx context.Context, dir string, want map[string]bool) map[string]string {
	found := map[string]string{}
	regular := func(mode string) bool { return mode == "100644" || mode == "100755" }
	// Each record is "mode object stage\tname".
	if out, err := git(ctx, dir, "ls-files", "--stage", "-z", "--", "."); err == nil {
		for _, rec := range strings.Split(out, "\x00") {
			meta, name, _ := strings.Cut(rec, "\t")
			f := strings.Fields(meta)
			if want[name] && len(f) == 3 && regular(f[0]) && f[2] == "0" {
				found[name] = f[1]
			}
		}
	}
	if len(found) == len(want) {
		return found
	}
	// Each record is "mode type object\tname". A work tree with no commit
	// yet has no HEAD.
	if out, err := git(ctx, dir, "ls-tree", "-r", "-z", "HEAD", "--", "."); err == nil {
		for _, rec := range strings.Split(out, "\x00") {
			meta, name, _ := strings.Cut(rec, "\t")
			f := strings.Fields(meta)
			if _, have := found[name]; want[name] && !have && len(f) == 3 && regular(f[0]) && f[1] == "blob" {
				found[name] = f[2]
			}
		}
	}
	return found
}

// guard undoes the agent's changes to protected files (their entries in
// git's index too) and puts back the test files it deleted, each finding a
// line for the ledger, and says
// which of the project's files changed (for the stall breaker). files is
// its listing of the project after the agent.
func (s fileSnapshot) guard(ctx context.Context, o *Options) (found, changed []string, files []fileInfo, err error) {
	g := o.Config.Guard
	files, err = o.projectFiles(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	changed = changes(s.work, workFiles(files))
	if o.guardGlobs().none(g) {
		found, err = s.guardMarks(ctx, o, files, byAgent, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		return found, changed, files, nil
	}
	now := map[string]bool{}
	repos := map[string]bool{}
	for _, f := range files {
		name := f.name
		now[name] = true
		if f.info.IsDir() {
			repos[name] = true
		}
	}
	// New files go first: one may be a link in place of a protected
	// file's directory, which putting the file back makes a directory again.
	found, err = s.removeCreated(ctx, o, files, byAgent)
	if err != nil {
		return nil, nil, nil, err
	}
	// A repository gone: its directory is made again, empty, so that
	// ralph's commit keeps a submodule (git takes an empty directory for
	// one not checked out) instead of deleting it from the repository.
	for name := range s.repos {
		if repos[name] {
			continue
		}
		if err := clearDirs(o.Dir, name); err != nil {
			return nil, nil, nil, fmt.Errorf("restore %s: %w", name, err)
		}
		if err := os.MkdirAll(filepath.Join(o.Dir, name), 0o755); err != nil {
			return nil, nil, nil, fmt.Errorf("restore %s: %w", name, err)
		}
		found = append(found, fmt.Sprintf("%s: the agent deleted this git repository in a protected directory, of which ralph keeps no copy: %s", name, lostEnd))
	}
	more, err := s.guardProtected(ctx, o, byAgent)
	if err != nil {
		return nil, nil, nil, err
	}
	found = append(found, more...)
	more, back, err := s.guardIndex(ctx, o, files, byAgent, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	found = append(found, more...)
	more, err = s.guardTests(ctx, o, byAgent, func(name string) bool { return !now[name] })
	if err != nil {
		return nil, nil, nil, err
	}
	found = append(found, more...)
	more, err = s.guardMarks(ctx, o, files, byAgent, back)
	if err != nil {
		return nil, nil, nil, err
	}
	found = append(found, more...)
	slices.Sort(found)
	return found, changed, files, nil
}

// removeCreated removes the protected files that who created since the
// snapshot: those of files, a listing of the project (or of where
// protected files can be) after who ran, that the snapshot has not, and
// the named pipes and the like, which git does not list, where they were
// and where who created protected files. It returns a line each for the
// ledger. Another git repository who created there is told of, never
// removed: it may hold the only copy of work that is not who's.
func (s fileSnapshot) removeCreated(ctx context.Context, o *Options, files []fileInfo, who string) ([]string, error) {
	globs := o.guardGlobs()
	var found []string
	dirs := map[string]bool{}
	maps.Copy(dirs, s.dirs)
	created := func(f fileInfo) error {
		name := f.name
		if _, was := s.protected[name]; was || s.repos[name] && f.info.IsDir() || s.special[name] && isSpecial(f.info.Mode()) ||
			!globs.protects(name) || s.inRepo(name) {
			return nil
		}
		dirs[parentDir(name)] = true
		if f.info.IsDir() {
			found = append(found, fmt.Sprintf("%s: %s created this git repository in a protected directory, where ralph does not look inside one nor remove one: %s", name, who, lostEnd))
			return nil
		}
		// A named pipe is removed as a file is: never opened.
		if err := os.Remove(filepath.Join(o.Dir, name)); err != nil && !os.IsNotExist(err) {
			return err
		}
		found = append(found, fmt.Sprintf("%s: %s created this protected file; ralph removed it", name, who))
		return nil
	}
	for _, f := range files {
		if err := created(f); err != nil {
			return nil, err
		}
	}
	for _, f := range o.specialFiles(ctx, dirs) {
		if err := created(f); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// guardTests puts back the test files that who deleted since the snapshot
// (gone says which are), a line each for the ledger. A protected one is
// put back by guardProtected, which runs first; the agent's deletion of
// it is told all the same. A test file that cannot be put back is taken
// as gone from then on: the guards after this one tell of their own
// deletions, not of this one again.
//
// One that git tracked has its entry put back in git's index too (see
// putInIndex): it may have been taken out with the file (git rm), or,
// to the agent's guard, taken out and had git ignore it, which the
// listing then leaves out (it lists the ignored files only where
// protected ones can be) as if the file were gone. Without its entry, a
// commit would take it out of the history, and the next snapshot would
// not list it: a deletion then would go unseen.
func (s fileSnapshot) guardTests(ctx context.Context, o *Options, who string, gone func(name string) bool) ([]string, error) {
	var found, tracked []string
	for name, st := range s.tests {
		if !gone(name) {
			continue
		}
		deleted := who + " deleted this test file (" + ratchetRule + ")"
		if _, ok := s.protected[name]; ok {
			found = append(found, name+": "+deleted) // put back above
			continue
		}
		line, err := putBack(ctx, o, name, st, deleted)
		if err != nil {
			return nil, err
		}
		if isLost(line) {
			delete(s.tests, name)
		} else if st.index != "" {
			tracked = append(tracked, name)
		}
		found = append(found, line)
	}
	if len(tracked) > 0 {
		if err := o.putInIndex(ctx, s.tests, tracked); err != nil {
			return nil, fmt.Errorf("restore git's index: %w", err)
		}
	}
	slices.Sort(found)
	return found, nil
}

// guardAfter is the guard of the project's files after the agent's: of
// the checks, and of the programs git runs in ralph's commits. It removes
// the protected files who created, as the agent's guard does: a test can
// write a file among the protected ones (a TestMain that passes a
// protected suite) as well as the agent that wrote it, and the next
// snapshot would take that file for the person's. It puts back the
// protected files who changed or deleted (or took out of git's index) and
// the test files who deleted, or, tracked by git, took out of its index
// and had git ignore (s.untracked, see indexWatch).
// Only where protected files can be is listed (see protectedFiles), not
// the whole project: each other file of the snapshot is looked up where
// it was. A file put back or not, each finding is a line for the ledger.
func (s fileSnapshot) guardAfter(ctx context.Context, o *Options, who string) ([]string, error) {
	files, err := o.protectedFiles(ctx, false)
	if err != nil {
		return nil, err
	}
	// New files go first, as in the agent's guard.
	found, err := s.removeCreated(ctx, o, files, who)
	if err != nil {
		return nil, err
	}
	more, err := s.guardProtected(ctx, o, who)
	if err != nil {
		return nil, err
	}
	found = append(found, more...)
	// The template, when no protect glob matches it, is not where the
	// listing looks.
	more, _, err = s.guardIndex(ctx, o, files, who, o.guardGlobs().protect.Match)
	if err != nil {
		return nil, err
	}
	found = append(found, more...)
	// The names each directory of test files holds, listed once: a listing
	// a directory, not a stat a file (a suite has thousands).
	held := map[string]map[string]bool{}
	more, err = s.guardTests(ctx, o, who, func(name string) bool {
		if _, ok := s.protected[name]; ok {
			return false // guardProtected's
		}
		if s.untracked[name] {
			return true
		}
		dir := parentDir(name)
		names, listed := held[dir]
		if !listed {
			names = dirNames(o.Dir, dir)
			held[dir] = names
		}
		return !names[name[strings.LastIndexByte(name, '/')+1:]]
	})
	if err != nil {
		return nil, err
	}
	found = append(found, more...)
	slices.Sort(found)
	return found, nil
}

// indexWatch is git's index as the checks begin, in a git work tree. A
// check (the agent's code) that takes a test file git tracks out of the
// index and has git ignore it leaves it on disk, where the guard after the
// checks looks, but the next snapshot, which lists no ignored test file,
// would not have it (the agent could delete it unseen), and a commit
// would record it gone. One that marks a file's entry skip-worktree or
// assume-unchanged hides its changes from ralph's commit (see guardMarks).
// git is asked only when the index changed: most checks leave it alone.
type indexWatch struct {
	stamp stamp
	ok    bool // there is a stamp to compare with
	// listed is git's listing (see gitListing) as the index stood at
	// listedAt, once it was asked for: untracked and marked share it
	// while nothing writes the index in between.
	listed   map[string]listed
	listedAt stamp
}

// watchIndex stamps git's index, in a git work tree. The path of the index
// is known from gitTree's run: no git runs for it.
func (s fileSnapshot) watchIndex(ctx context.Context, o *Options) *indexWatch {
	if !o.gitTree(ctx) || o.gitIndex == "" {
		return &indexWatch{}
	}
	st, ok := stampOf(o.gitIndex)
	return &indexWatch{stamp: st, ok: ok}
}

// since returns git's listing of the files it knows of (see gitListing),
// by name, when the index changed since w was taken, and nil when it did
// not. git lists them once for as long as the index stays as it was then.
func (w *indexWatch) since(ctx context.Context, o *Options) (map[string]listed, error) {
	if !w.ok {
		return nil, nil
	}
	now, ok := stampOf(o.gitIndex)
	switch {
	case ok && now == w.stamp:
		return nil, nil
	case ok && w.listed != nil && now == w.listedAt:
		return w.listed, nil
	}
	out, err := gitListing(ctx, o.Dir)
	if err != nil {
		return nil, fmt.Errorf("list the files git knows of: %w", err)
	}
	w.listed, w.listedAt = maps.Collect(listing(out)), now
	return w.listed, nil
}

// marked clears the marks (see guardMarks) that who, the checks, set on
// entries of git's index since the snapshot s was taken, a line each for
// the ledger. The guard after the agent cleared those the agent set.
func (w *indexWatch) marked(ctx context.Context, o *Options, s fileSnapshot, who string) ([]string, error) {
	now, err := w.since(ctx, o)
	if err != nil || now == nil {
		return nil, err
	}
	// Only the files marked since are looked at on disk: gone, one is not
	// listed (see gitFiles).
	var files []fileInfo
	for name, e := range now {
		if e.marks&^s.marks[name] == 0 {
			continue
		}
		if info, err := os.Lstat(filepath.Join(o.Dir, name)); err == nil {
			files = append(files, fileInfo{name: name, info: info, index: e.index, marks: e.marks})
		}
	}
	return s.guardMarks(ctx, o, files, who, nil)
}

// trackedTest reports whether name is a test file of s, not protected,
// that git tracked when s was taken.
func (s fileSnapshot) trackedTest(name string) bool {
	_, protected := s.protected[name]
	return s.tests[name].index != "" && !protected
}

// untracked returns the test files of s that git tracked and that, since
// w was taken, were taken out of git's index and are ignored by git: gone
// from git's listing of the files it knows of, as they are to the agent's
// guard. Nothing when the index is as it was.
func (w *indexWatch) untracked(ctx context.Context, o *Options, s fileSnapshot) (map[string]bool, error) {
	tracked := false
	for name := range s.tests {
		if tracked = s.trackedTest(name); tracked {
			break
		}
	}
	if !tracked {
		return nil, nil
	}
	now, err := w.since(ctx, o)
	if err != nil || now == nil {
		return nil, err
	}
	untracked := map[string]bool{}
	for name := range s.tests {
		if _, known := now[name]; s.trackedTest(name) && !known {
			untracked[name] = true
		}
	}
	return untracked, nil
}

// guardProtected puts back the protected files that who changed or
// deleted since the snapshot, a line each for the ledger. The guard of the
// checks calls it too: a test can rewrite a check's script as well as the
// agent that wrote the test.
func (s fileSnapshot) guardProtected(ctx context.Context, o *Options, who string) ([]string, error) {
	var found []string
	for name, st := range s.protected {
		path := filepath.Join(o.Dir, name)
		if inDirs(o.Dir, name) && st.unchanged(path) {
			continue
		}
		what := "changed"
		if _, err := os.Lstat(path); err != nil {
			what = "deleted"
		}
		line, err := putBack(ctx, o, name, st, who+" "+what+" this protected file")
		if err != nil {
			return nil, err
		}
		if isLost(line) {
			s.stands(o, name)
		}
		found = append(found, line)
	}
	slices.Sort(found)
	return found, nil
}

// guardIndex puts back in git's index the entries of the protected files
// that who took out of it (git rm --cached), or changed, as they were when
// the snapshot was taken, a line each for the ledger: the file on disk is
// guarded whether git tracks it or not, but a commit (the agent's or
// ralph's) would record that git tracks it no more, and the history that
// others run would lose it (an acceptance test). An entry changed to
// another copy of the file (git update-index --cacheinfo), which the file
// on disk then hides from `git add` and `git status` (--skip-worktree),
// would have the history run a check other than the one the checks ran;
// one changed to the file as it is on disk (git add; ralph's commit) is
// what they ran, and stays. files is a listing after who ran; inListing,
// when not nil, says which protected files it would list (nil: all). A
// file git tracked that it lists untracked was taken out; one it does not
// list, which guardProtected (run first) put back on disk and told of as
// deleted, may have been (git rm), and has its entry put back too. The
// entries go back as the index had them (git update-index --cacheinfo):
// git reads no file for it, and runs no filter. Unless such a file is
// found, git is not run. back are the names whose entries went back.
func (s fileSnapshot) guardIndex(ctx context.Context, o *Options, files []fileInfo, who string, inListing func(string) bool) (found, back []string, err error) {
	if !s.tracked() {
		return nil, nil, nil // no listing to look through
	}
	entries := map[string]string{} // by name, the protected files listed
	for _, f := range files {
		if st, ok := s.protected[f.name]; ok && st.index != "" {
			entries[f.name] = f.index
		}
	}
	for name, st := range s.protected {
		if st.index == "" {
			continue
		}
		now, listed := entries[name]
		switch {
		case listed && stageZero(now) == st.index:
			continue
		case listed && now == "":
			found = append(found, fmt.Sprintf("%s: %s took this protected file out of git's index; ralph put it back in", name, who))
		case listed && (who == byGit || onDisk(o.Dir, name, st, stageZero(now))):
			// ralph's commit stages what is on disk through the filters
			// git runs (a program git ran that changed the file is told
			// of by its contents).
			continue
		case listed:
			found = append(found, fmt.Sprintf("%s: %s changed this protected file's entry in git's index; ralph put it back", name, who))
		case inListing != nil && !inListing(name):
			continue // not looked for
		}
		back = append(back, name)
	}
	if len(back) == 0 {
		return nil, nil, nil
	}
	if err := o.putInIndex(ctx, s.protected, back); err != nil {
		return nil, nil, fmt.Errorf("restore git's index: %w", err)
	}
	slices.Sort(found)
	return found, back, nil
}

// onDisk reports whether entry, an index entry's mode and object, is the
// protected file name as it is on disk, as st says it was (guardProtected
// put it back): its object is the file's contents as git stores them with
// no filter (git hash-object --no-filters), by the hash the object id's
// length says (SHA-1 or SHA-256), and its mode the file's, or the
// snapshot's entry's (git keeps that one where core.fileMode is off).
func onDisk(dir, name string, st fileState, entry string) bool {
	mode, object, ok := strings.Cut(entry, " ")
	if !ok {
		return false
	}
	was, _, _ := strings.Cut(st.index, " ")
	disk := "100644"
	switch {
	case st.mode&fs.ModeSymlink != 0:
		disk = "120000"
	case st.mode&0o100 != 0:
		disk = "100755"
	}
	if mode != disk && mode != was {
		return false
	}
	var h hash.Hash
	switch len(object) {
	case 2 * sha1.Size:
		h = sha1.New()
	case 2 * sha256.Size:
		h = sha256.New()
	default:
		return false
	}
	if st.mode&fs.ModeSymlink != 0 {
		fmt.Fprintf(h, "blob %d\x00%s", len(st.link), st.link)
		return hex.EncodeToString(h.Sum(nil)) == object
	}
	// git's object begins with the size: taken first, and the file read
	// (a regular one only) must be of that size still.
	path := filepath.Join(dir, name)
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() {
		return false
	}
	fmt.Fprintf(h, "blob %d\x00", info.Size())
	if n, err := readbuf.ReadEach(path, func(p []byte) { h.Write(p) }); err != nil || n != info.Size() {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == object
}

// ignoreStat reports whether git's core.ignoreStat is set in the work
// tree.
func ignoreStat(ctx context.Context, o *Options) bool {
	out, err := git(ctx, o.Dir, "config", "--bool", "core.ignoreStat")
	return err == nil && strings.TrimSpace(out) == "true"
}

// hidesChange reports whether f's entry in git's index, as a listing after
// a run has it, is not f as it is on disk: a mark on it keeps a change out
// of commits. With core.ignoreStat, git marks every file it adds
// assume-unchanged itself, staged as it is on disk (see ignoreStat).
func hidesChange(dir string, f fileInfo) bool {
	st := fileState{mode: f.info.Mode(), index: stageZero(f.index)}
	if st.mode&fs.ModeSymlink != 0 {
		link, err := os.Readlink(filepath.Join(dir, f.name))
		if err != nil {
			return true
		}
		st.link = link
	}
	return !onDisk(dir, f.name, st, st.index)
}

// stageZero is the mode and object of index, a listing's index entry (see
// fileInfo.index), when it is no conflict's side; else "".
func stageZero(index string) string {
	if entry, ok := strings.CutSuffix(index, " 0"); ok {
		return entry
	}
	return ""
}

// tracked reports whether git tracked any of the protected files of s.
func (s fileSnapshot) tracked() bool {
	for _, st := range s.protected {
		if st.index != "" {
			return true
		}
	}
	return false
}

// putInIndex puts the entries of the files names back in git's index, as
// files (a snapshot's) had them. The names git update-index --cacheinfo
// takes are the work tree's, not the work directory's, which may be a
// directory in it.
func (o *Options) putInIndex(ctx context.Context, files map[string]fileState, names []string) error {
	prefix, err := git(ctx, o.Dir, "rev-parse", "--show-prefix")
	if err != nil {
		return err
	}
	prefix = strings.TrimSuffix(prefix, "\n")
	args := []string{"update-index", "--add", "--replace"}
	for _, name := range names {
		mode, object, _ := strings.Cut(files[name].index, " ")
		args = append(args, "--cacheinfo", mode+","+object+","+prefix+name)
	}
	_, err = git(ctx, o.Dir, args...)
	if err != nil && strings.Contains(err.Error(), "index.lock") {
		// One that a git killed during a commit left (the agent's).
		o.clearIndexLock(ctx)
		_, err = git(ctx, o.Dir, args...)
	}
	return err
}

// guardMarks clears the marks that who set since the snapshot on the
// entries in git's index of files, a listing after who ran (see
// fileInfo.marks), a line each for the ledger: a file marked skip-worktree
// or assume-unchanged, then changed, is one whose change git add and git
// status pass over, and so ralph's commit: the checks ran it, the history
// would lack it. A mark the snapshot has stays (a person's, to keep a
// local edit out of commits), as do the marks of a file gone from disk,
// which the listing leaves out: a sparse checkout's, whose clearing would
// have the commit delete the file. back are entries put back whole since
// the listing (see guardIndex), their marks with them. Unless a mark was
// set, git is not run.
func (s fileSnapshot) guardMarks(ctx context.Context, o *Options, files []fileInfo, who string, back []string) ([]string, error) {
	var found, skip, assume []string
	// Asked once, and only when such a mark is found.
	ignoresStat := sync.OnceValue(func() bool { return ignoreStat(ctx, o) })
	for _, f := range files {
		set := f.marks &^ s.marks[f.name]
		if set == assumeUnchanged && !hidesChange(o.Dir, f) && ignoresStat() {
			// Git's own: with core.ignoreStat, git marks every file it
			// adds so, staged as it is on disk.
			set = 0
		}
		if set == 0 || slices.Contains(back, f.name) {
			continue
		}
		var names []string
		if set&skipWorktree != 0 {
			skip = append(skip, f.name)
			names = append(names, "skip-worktree")
		}
		if set&assumeUnchanged != 0 {
			assume = append(assume, f.name)
			names = append(names, "assume-unchanged")
		}
		line := fmt.Sprintf("%s: %s marked this file %s in git's index%s", f.name, who, strings.Join(names, " and "), markEnd)
		if len(names) > 1 {
			line += "s"
		}
		found = append(found, line)
	}
	if len(found) == 0 {
		return nil, nil
	}
	if err := o.clearMarks(ctx, skip, assume); err != nil {
		return nil, fmt.Errorf("clear the marks in git's index: %w", err)
	}
	slices.Sort(found)
	return found, nil
}

// markEnd ends guardMarks' lines (with an "s" after it for two marks).
const markEnd = ", which hides its changes from commits; ralph cleared the mark"

// isMarkLine reports whether t, a tampered line, is guardMarks': a mark
// cleared, which fails no iteration. It hid work from the commit rather
// than forged a pass: the checks ran the files as they are, and the
// commit, the mark cleared, records them so.
func isMarkLine(t string) bool {
	return strings.HasSuffix(t, markEnd) || strings.HasSuffix(t, markEnd+"s")
}

// clearMarks takes the skip-worktree mark off the entries in git's index
// of the files skip names, and the assume-unchanged mark off those of
// assume, in one run. Given both options, git update-index applies
// --no-assume-unchanged to every file named after it, and
// --no-skip-worktree to those named after it and before the other: its
// files come first. Each name is "./" and the file's, which git reads as a file's
// however it begins ("-x" would be an option).
func (o *Options) clearMarks(ctx context.Context, skip, assume []string) error {
	args := []string{"update-index"}
	if len(skip) > 0 {
		args = append(args, "--no-skip-worktree")
		for _, name := range skip {
			args = append(args, "./"+name)
		}
	}
	if len(assume) > 0 {
		args = append(args, "--no-assume-unchanged")
		for _, name := range assume {
			args = append(args, "./"+name)
		}
	}
	_, err := git(ctx, o.Dir, args...)
	if err != nil && strings.Contains(err.Error(), "index.lock") {
		o.clearIndexLock(ctx) // as in putInIndex
		_, err = git(ctx, o.Dir, args...)
	}
	return err
}

// stands takes the protected file name as it is now for as it was, after
// a change to it that could not be undone: the guards after this one (of
// the checks, of ralph's commit) compare with it, and tell of their own
// changes, not of this one again in their name.
func (s fileSnapshot) stands(o *Options, name string) {
	path := filepath.Join(o.Dir, name)
	now, ok := placeOf(path)
	if !ok {
		// Its line tells of the deletion: the test files' guard, after
		// this one, says no more of it.
		delete(s.protected, name)
		delete(s.tests, name)
		return
	}
	if now.mode.IsRegular() {
		if sum, size, err := sumFile(path); err == nil {
			now.sum, now.summed, now.size = sum, true, size
		}
	}
	s.protected[name] = now
}

// putBack puts a guarded file back as it was before the agent ran, and
// returns the ledger's line for it: what the agent did, and whether ralph
// could undo it. A file too large to keep is put back from git's copy, if
// git has one as the file was; else it cannot be, and the line ends with
// lostEnd. It never writes through a link: whatever is at the file's
// place, or at one of its directories', goes.
func putBack(ctx context.Context, o *Options, name string, st fileState, what string) (string, error) {
	isLink := st.mode&fs.ModeSymlink != 0
	if st.data == nil && !isLink {
		ok, err := restoreBlob(ctx, o, name, st)
		if err != nil {
			return "", fmt.Errorf("restore %s: %w", name, err)
		}
		if !ok {
			return fmt.Sprintf("%s: %s; past the %d MiB of guarded files ralph keeps, and not in git as it was: %s", name, what, maxKept>>20, lostEnd), nil
		}
		return fmt.Sprintf("%s: %s; ralph restored it from git", name, what), nil
	}
	path := filepath.Join(o.Dir, name)
	dir := filepath.Dir(path)
	if err := clearDirs(o.Dir, name); err != nil {
		return "", fmt.Errorf("restore %s: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("restore %s: %w", name, err)
	}
	if err := os.RemoveAll(path); err != nil {
		return "", fmt.Errorf("restore %s: %w", name, err)
	}
	var err error
	if isLink {
		err = os.Symlink(st.link, path)
	} else {
		err = writeNew(path, st.data, st.mode.Perm())
	}
	if err != nil {
		return "", fmt.Errorf("restore %s: %w", name, err)
	}
	return fmt.Sprintf("%s: %s; ralph restored it", name, what), nil
}

// restoreBlob puts the file name back from st.blob, git's copy of it, when
// that copy is the file as it was: the same contents for a protected file
// (its sum), the same size for a test file (whose contents the agent may
// change: only its deletion is undone). The copy is written beside the
// file and checked before it takes the file's place, so a copy that is
// not the file changes nothing. It reports whether the file is back; a
// file without a blob, or whose blob git cannot give (gone since), is not.
// git runs no filter for it (the copy is as git stores it) nor hook, and a
// second signal stops it all the same.
func restoreBlob(ctx context.Context, o *Options, name string, st fileState) (bool, error) {
	if st.blob == "" {
		return false, nil
	}
	path := filepath.Join(o.Dir, name)
	if err := clearDirs(o.Dir, name); err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".ralph-*")
	if err != nil {
		return false, err
	}
	// Gone once renamed; else the copy goes.
	defer os.Remove(tmp.Name())
	ctx, cancel := proc.UntilKilled(ctx)
	defer cancel()
	sum := sha256.New()
	// A write that failed (a full disk) makes git fail too: it is the
	// error, not a copy git does not have.
	out := &sticky.Writer{W: tmp}
	gerr := gitTo(ctx, o.Dir, io.MultiWriter(out, sum), "cat-file", "blob", st.blob)
	info, err := tmp.Stat()
	if err == nil {
		err = tmp.Chmod(st.mode.Perm())
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	var exit *exec.ExitError
	switch {
	case gerr != nil && proc.Killed():
		return false, errors.New("stopped by the second signal")
	case out.Err() != nil:
		return false, out.Err()
	case errors.As(gerr, &exit):
		return false, nil // git has no such object (any more)
	case gerr != nil:
		return false, gerr // git could not start, say
	case err != nil:
		return false, err
	case st.summed && !bytes.Equal(sum.Sum(nil), st.sum[:]):
		return false, nil
	case !st.summed && info.Size() != st.size:
		return false, nil
	}
	if err := os.RemoveAll(path); err != nil {
		return false, err
	}
	return true, os.Rename(tmp.Name(), path)
}

// writeNew creates the file at path, which must not exist, with data and
// perm (umask aside, as the file had it).
func writeNew(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// clearDirs takes away what is in place of a directory on the way from
// root to the file name: a guarded file's directories were directories
// when it was listed (a listing never enters a link), so a link there (to
// anywhere, outside the project too) or a file is the agent's.
func clearDirs(root, name string) error {
	for dir := range dirsOf(root, name) {
		info, err := os.Lstat(dir)
		if err != nil {
			return nil // missing from here on: MkdirAll makes the rest
		}
		if !info.IsDir() {
			if err := os.Remove(dir); err != nil {
				return err
			}
		}
	}
	return nil
}

// inDirs reports whether the way from root to the file name goes through
// directories only. A file read the same through a link in place of one
// of them has changed all the same: it may be a copy outside the project,
// where the next listing does not look.
func inDirs(root, name string) bool {
	for dir := range dirsOf(root, name) {
		if info, err := os.Lstat(dir); err != nil || !info.IsDir() {
			return false
		}
	}
	return true
}

// ownDir is what the directory dir of the project at root holds (dir
// relative and slash-separated, "" for root itself); nothing when dir is
// gone, not a directory, or reached through a link in place of one of its
// directories, which leads out of the project (see inDirs).
func ownDir(root, dir string) []os.DirEntry {
	if dir != "" && !inDirs(root, dir+"/.") {
		return nil
	}
	entries, _ := os.ReadDir(filepath.Join(root, dir))
	return entries
}

// dirNames are the names ownDir finds in dir: none where a file read
// through a link may be a copy outside the project.
func dirNames(root, dir string) map[string]bool {
	entries := ownDir(root, dir)
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names
}

// dirsOf yields the directories on the way from root to the file name,
// relative and slash-separated, outermost first.
func dirsOf(root, name string) iter.Seq[string] {
	return func(yield func(string) bool) {
		dir := root
		parts := strings.Split(name, "/")
		for _, part := range parts[:len(parts)-1] {
			dir = filepath.Join(dir, part)
			if !yield(dir) {
				return
			}
		}
	}
}

// fileInfo is a file of the project: its name, relative and slash-separated,
// and what Lstat said of it when it was listed.
type fileInfo struct {
	name string
	info fs.FileInfo
	// index is the file's entry in git's index as git listed it ("mode
	// object stage", the first of a conflict's), "" for a file git does
	// not track (or a listing outside git).
	index string
	// marks are the marks git's index keeps on the file's entry that hide
	// its changes from git add and git status (skipWorktree,
	// assumeUnchanged), as the listing's tags say; 0 outside git.
	marks uint8
}

// relisted returns listed, the project's files as a listing found them
// (see takeFiles), with ralph's own three files among them looked at again:
// ralph has written them since. ok is false when there is no listing, or
// one of the three is no longer as it was, and the project is to be
// listed again.
func (o *Options) relisted(listed []fileInfo) (files []fileInfo, ok bool) {
	if listed == nil {
		return nil, false
	}
	files = slices.Clone(listed)
	for i, f := range files {
		if !slices.Contains(ownFiles[:], f.name) {
			continue
		}
		info, err := os.Lstat(o.path(f.name))
		if err != nil || info.Mode().Type() != f.info.Mode().Type() {
			return nil, false
		}
		files[i].info = info
	}
	return files, true
}

// projectFiles lists the work directory's files, relative and slash-
// separated: the files git knows of (tracked, and untracked but not
// ignored) in a git work tree, and the protected files git ignores (see
// protectedFiles), else every file but those under .git and node_modules,
// named pipes, sockets and devices included (git lists none: see
// specialFiles). In a git work tree, another git repository is listed as
// its directory, not its files, which git does not list: a submodule
// (checked out or not), or a repository git does not track (a clone in
// the project). Such a directory is the only one listed.
func (o *Options) projectFiles(ctx context.Context) ([]fileInfo, error) {
	dir := o.Dir
	if o.gitTree(ctx) {
		out, err := gitListing(ctx, dir)
		if err != nil {
			return nil, err
		}
		files := gitFiles(dir, out, nil)
		ignored, err := o.protectedFiles(ctx, true)
		if err != nil {
			return nil, err
		}
		return append(files, ignored...), nil
	}
	var files []fileInfo
	walkFiles(dir, "", &files)
	return files, nil
}

// gitFiles are the files of the work directory dir that out, a listing of
// git's (see listing), names, as they are on disk, appended to files.
func gitFiles(dir, out string, files []fileInfo) []fileInfo {
	for name, e := range listing(out) {
		info, err := os.Lstat(filepath.Join(dir, name))
		switch {
		case err != nil:
			continue // a file git knows of that is gone is no file of the project
		case e.kind == plainFile && info.IsDir():
			continue // one that became a directory: git lists the files in it
		case e.kind == untrackedRepo && !info.IsDir():
			continue
		}
		files = append(files, fileInfo{name: name, info: info, index: e.index, marks: e.marks})
	}
	return files
}

// protectedFiles lists the files of the project where protected files can
// be (under the protect globs' roots, see literalRoots) that the protect
// globs match, whether git ignores them or not: a protected file that the
// agent (or a test) has git ignore, or untracks and has git ignore, is
// still guarded, and one created in an ignored place is still removed.
// With ignored set, it lists, in a git work tree, only the untracked files
// git ignores, which gitListing leaves out, and outside git none: the walk
// lists every file. Listing the roots only keeps the cost of ignored
// directories (a build's output) away, unless a protect glob begins with a
// wildcard.
func (o *Options) protectedFiles(ctx context.Context, ignored bool) ([]fileInfo, error) {
	globs := o.guardGlobs()
	if len(globs.protectRoots) == 0 {
		return nil, nil
	}
	var files []fileInfo
	if o.gitTree(ctx) {
		// Without --exclude-standard, --others lists what git ignores too.
		args := []string{"ls-files", "-z", "-v", "--stage", "--cached", "--others"}
		if ignored {
			args = []string{"ls-files", "-z", "-v", "--others", "--ignored", "--exclude-standard"}
		}
		args = append(args, "--")
		for _, root := range globs.protectRoots {
			if root == "" {
				// The whole project, but for node_modules, as the walk
				// outside git: git would list each file of one it ignores.
				args = append(args, ".", ":(exclude,glob)**/node_modules/**")
				continue
			}
			args = append(args, ":(literal)"+root)
		}
		out, err := git(ctx, o.Dir, args...)
		if err != nil {
			return nil, err
		}
		files = gitFiles(o.Dir, out, nil)
	} else if !ignored {
		for _, root := range globs.protectRoots {
			if root == "" {
				walkFiles(o.Dir, "", &files)
				continue
			}
			// Not through a link in place of one of its directories: what
			// it leads to is not the project's. A link in place of the
			// root is listed as itself, as the walk lists one.
			path := filepath.Join(o.Dir, root)
			info, err := os.Lstat(path)
			switch {
			case err != nil || !inDirs(o.Dir, root) || !walked(root, info):
			case info.IsDir():
				walkFiles(path, root+"/", &files)
			default:
				files = append(files, fileInfo{name: root, info: info})
			}
		}
	}
	return slices.DeleteFunc(files, func(f fileInfo) bool { return !globs.protects(f.name) }), nil
}

// walkFiles appends the files in the directory path to files, named with
// prefix (their directory in the project, slash-separated, and a slash;
// "" at its root), and the files of its directories, each directory's at
// its name's place: filepath.WalkDir's order, without its cost for each
// name (a path cleaned, and made relative again).
func walkFiles(path, prefix string, files *[]fileInfo) {
	// Unreadable parts are not the guard's business: what could be read
	// of a directory is listed.
	entries, _ := os.ReadDir(path)
	for _, e := range entries {
		name, t := e.Name(), e.Type()
		switch {
		case t.IsDir():
			if name != ".git" && name != "node_modules" {
				walkFiles(path+string(filepath.Separator)+name, prefix+name+"/", files)
			}
		// A link is listed as itself, not followed: the guard sees an
		// agent that turns a file into a link. A named pipe, a socket or
		// a device is listed too, never read.
		case t.IsRegular() || t&fs.ModeSymlink != 0 || isSpecial(t):
			if info, err := e.Info(); err == nil { // else gone meanwhile
				*files = append(*files, fileInfo{name: prefix + name, info: info})
			}
		}
	}
}

// Kinds of the names in a listing of git's (see listing).
const (
	plainFile     = iota // a file, tracked or not
	gitlink              // a submodule: another repository, tracked by its commit
	untrackedRepo        // a repository git does not track, listed as its directory
)

// gitListing lists the files of the git work tree at dir that git knows
// of, tracked or not ignored, for listing to read.
func gitListing(ctx context.Context, dir string) (string, error) {
	return git(ctx, dir, "ls-files", "-z", "-v", "--stage", "--cached", "--others", "--exclude-standard", "--", ".")
}

// listed is what a listing of git's says of a name: its kind, its entry
// in the index if git tracks it (see fileInfo.index), and the marks on
// that entry (see fileInfo.marks).
type listed struct {
	kind  int
	index string
	marks uint8
}

// The marks on an entry of git's index that hide the file's changes from
// git add and git status, and so from a commit: set with git update-index
// --skip-worktree and --assume-unchanged.
const (
	skipWorktree uint8 = 1 << iota
	assumeUnchanged
)

// listing reads the names that git ls-files -z -v --stage --cached
// --others prints, relative and slash-separated, each once, with its
// kind, index entry and marks. Each record begins with a tag and a space:
// "?" for a name git does not track, else "S" for an entry marked
// skip-worktree, a lower-case one for an entry marked assume-unchanged
// ("s" for both). A tracked name is then "mode object stage\tname", and
// listed once per stage of a conflict; one git does not track is its name
// alone, with a "/" after the name of a repository.
func listing(out string) iter.Seq2[string, listed] {
	return func(yield func(string, listed) bool) {
		last := ""
		for _, rec := range strings.Split(out, "\x00") {
			if len(rec) < 2 || rec[1] != ' ' {
				continue // the end, after the last NUL
			}
			tag, rec := rec[0], rec[2:]
			name, e := rec, listed{kind: plainFile}
			if tag == '?' {
				if n, ok := strings.CutSuffix(rec, "/"); ok {
					name, e.kind = n, untrackedRepo
				}
			} else if meta, tracked, ok := strings.Cut(rec, "\t"); ok && isStage(meta) {
				name, e.index = tracked, meta
				if strings.HasPrefix(meta, "160000 ") {
					e.kind = gitlink
				}
				if tag == 'S' || tag == 's' {
					e.marks |= skipWorktree
				}
				if 'a' <= tag && tag <= 'z' {
					e.marks |= assumeUnchanged
				}
			}
			if name == "" || name == last {
				continue
			}
			last = name
			if !yield(name, e) {
				return
			}
		}
	}
}

// isStage reports whether meta is a tracked entry's "mode object stage"
// (100644 5716ca5987cbf97d6bb54920bea6adde242d87e6 0).
func isStage(meta string) bool {
	mode, rest, ok := strings.Cut(meta, " ")
	return ok && len(mode) == 6 && strings.Trim(mode, "01234567") == "" && strings.Count(rest, " ") == 1
}

// literalDirs are the directories that globs (guardPatterns') name before
// their first wildcard, each once: "" for the project's root.
func literalDirs(globs []string) []string {
	var dirs []string
	for _, g := range globs {
		segs := strings.Split(g, "/")
		n := 0
		for n < len(segs)-1 && !strings.ContainsAny(segs[n], `*?[\`) {
			n++
		}
		if dir := strings.Join(segs[:n], "/"); !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// walked reports whether the walk of the project (see walkFiles) lists
// the file name, or the files in it: not under .git or node_modules.
func walked(name string, info fs.FileInfo) bool {
	segs := strings.Split(name, "/")
	if last := segs[len(segs)-1]; info.IsDir() && (last == ".git" || last == "node_modules") {
		return false
	}
	return !slices.ContainsFunc(segs[:len(segs)-1], func(s string) bool { return s == ".git" || s == "node_modules" })
}

// literalRoots are where the files that globs (guardPatterns') match can
// be: the part of each glob before its first wildcard, or the whole glob
// when it has none (a file, or a directory and the files in it), each
// once and none inside another, sorted: "" alone for the whole project.
func literalRoots(globs []string) []string {
	var roots []string
	for _, g := range globs {
		segs := strings.Split(g, "/")
		n := 0
		for n < len(segs) && !strings.ContainsAny(segs[n], `*?[\`) {
			n++
		}
		roots = append(roots, strings.Join(segs[:n], "/"))
	}
	slices.Sort(roots)
	roots = slices.Compact(roots)
	var out []string
	for _, r := range roots {
		if !slices.ContainsFunc(roots, func(in string) bool { return in != r && (in == "" || strings.HasPrefix(r, in+"/")) }) {
			out = append(out, r)
		}
	}
	return out
}

// parentDir is the directory of the file name, "" for the project's root.
func parentDir(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}

// specialFiles are the protected named pipes, sockets and devices in a git
// work tree, which git does not list: looked for, without reading one, in
// dirs, the directories of protected files, and in those the protect
// globs name (not in their subdirectories: that would be a walk of the
// project for "**/*.sql"). Outside git, the listing has them all.
func (o *Options) specialFiles(ctx context.Context, dirs map[string]bool) []fileInfo {
	globs := o.guardGlobs()
	if len(globs.protectDirs) == 0 || !o.gitTree(ctx) {
		return nil
	}
	var files []fileInfo
	look := func(dir string) {
		// Not through a link in place of a directory: what it leads to
		// is not the project's, and a pipe there not ralph's to remove.
		for _, e := range ownDir(o.Dir, dir) {
			if !isSpecial(e.Type()) {
				continue
			}
			name := e.Name()
			if dir != "" {
				name = dir + "/" + name
			}
			if !globs.protects(name) {
				continue
			}
			if info, err := e.Info(); err == nil {
				files = append(files, fileInfo{name: name, info: info})
			}
		}
	}
	for _, dir := range globs.protectDirs {
		if !dirs[dir] {
			look(dir)
		}
	}
	for dir := range dirs {
		look(dir)
	}
	return files
}
