package loop

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// stamp is what a file's metadata says of every write to it since: which
// file is at its place (its device and inode) and when its status last
// changed. A write changes that time, and so does a rename, a link or a
// chmod; no program can set it back, as it can the modification time.
type stamp struct {
	dev, ino          uint64
	changed, modified int64
}

// stampOf is the stamp of the file at path; ok is false when there is none.
// Its change time is 0 where ralph does not know the field (see
// changeTime).
func stampOf(path string) (s stamp, ok bool) {
	info, err := os.Lstat(path)
	if err != nil {
		return s, false
	}
	return stampInfo(info)
}

// stampInfo is the stamp of info, a file's, when the system says its
// device and inode.
func stampInfo(info os.FileInfo) (s stamp, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return s, false
	}
	return stamp{dev: uint64(st.Dev), ino: uint64(st.Ino), changed: changeTime(st), modified: info.ModTime().UnixNano()}, true
}

// stamps are the protected files' stamps as the checks begin, and the
// directories' on the way to them. The guard after the checks compares the
// files' contents with the snapshot's, which a test that rewrites a
// protected file and puts it back before the checks end passes: a check
// running at the same time read the rewritten one. The stamps tell such a
// file. A test can as well move a protected file's directory away, put a
// stand-in in its place and move it back: the file's own stamp is then as
// before, and the directories' stamps and watch (see moveWatch) tell it.
type stamps struct {
	files map[string]stamp
	// dirs are the directories on the way from the project root (".") to
	// the protected files, each once, with their stamps when taken (zero
	// when there was none): only which directory is at the place (its
	// device and inode) is compared, as a check may well create a file
	// next to a protected one, which changes its directory's times.
	dirs  []string
	stamp []stamp
	watch *moveWatch // nil: not watched (see watchMoves)
}

// stampProtected stamps the protected files of s and the directories on
// the way to them, and watches those until close. A watch that cannot be
// set up is err, and the stamps are taken all the same: they tell a
// directory the checks left swapped, not one they put back.
func (s fileSnapshot) stampProtected(dir string) (st stamps, err error) {
	st.files = make(map[string]stamp, len(s.protected))
	for name := range s.protected {
		if sp, ok := stampOf(filepath.Join(dir, name)); ok {
			st.files[name] = sp
		}
	}
	st.dirs = s.protectedDirs()
	if len(st.dirs) == 0 {
		return st, nil
	}
	// The watch first, the stamps next: a directory moved in between is
	// told by the watch, whichever stamp was taken.
	paths := make([]string, len(st.dirs))
	for i, d := range st.dirs {
		paths[i] = filepath.Join(dir, d)
	}
	st.watch, err = watchDirs(paths)
	st.stamp = make([]stamp, len(st.dirs))
	for i, p := range paths {
		st.stamp[i], _ = dirStamp(p)
	}
	return st, err
}

// watchDirs is watchMoves, but where a test makes the watch fail.
var watchDirs = watchMoves

// protectedDirs are the directories that hold the protected files of s and
// their parents up to the project root ("."), each once, sorted.
func (s fileSnapshot) protectedDirs() []string {
	seen := map[string]bool{}
	for name := range s.protected {
		// A directory seen has had its parents seen too: each is walked
		// once, however many protected files it holds.
		for d := filepath.Dir(name); !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			if d == "." || d == "/" {
				break
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// dirStamp is the stamp of the directory at path, symbolic links followed
// as a check's path to a protected file follows them: its device and inode
// only, which say what directory is there (see stamps.dirs).
func dirStamp(path string) (s stamp, ok bool) {
	info, err := os.Stat(path)
	if err != nil {
		return s, false
	}
	s, ok = stampInfo(info)
	return stamp{dev: s.dev, ino: s.ino}, ok
}

// close ends the watch of the directories.
func (st stamps) close() {
	if st.watch != nil {
		st.watch.close()
	}
}

// touched names the files whose stamps changed, sorted.
func (st stamps) touched(dir string) []string {
	var names []string
	for name, was := range st.files {
		if now, ok := stampOf(filepath.Join(dir, name)); !ok || now != was {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// moved are the ledger's lines for the directories on the way to the
// protected files that the checks moved or removed while they ran, put
// back or not: a check running at the same time may have read a stand-in
// at a protected file's path. A watch that failed (err) tells no more
// than the stamps do.
func (st stamps) moved(dir string) (lines []string, err error) {
	var which []int
	if st.watch != nil {
		which, err = st.watch.moved()
	}
	for i, d := range st.dirs {
		if now, _ := dirStamp(filepath.Join(dir, d)); now != st.stamp[i] || slices.Contains(which, i) {
			name := d + "/"
			if d == "." {
				name = "the project directory"
			}
			lines = append(lines, fmt.Sprintf("%s: %s moved or replaced this directory of protected files while they ran: what they read of the protected files in it proves nothing", name, byChecks))
		}
	}
	return lines, err
}

// putBackInTime are the ledger's lines for the protected files the checks
// changed and put back before they ended (touched, less those that
// reported names as changed still): a check running at the same time may
// have read the file changed, and its pass proves nothing.
func putBackInTime(touched, reported []string) []string {
	var lines []string
	for _, name := range touched {
		if slices.ContainsFunc(reported, func(l string) bool { return strings.HasPrefix(l, name+": ") }) {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: %s changed this protected file while they ran, and put it back: what they read of it proves nothing", name, byChecks))
	}
	return lines
}
