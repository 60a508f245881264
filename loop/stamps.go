package loop

import (
	"fmt"
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
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return s, false
	}
	return stamp{dev: uint64(st.Dev), ino: uint64(st.Ino), changed: changeTime(st), modified: info.ModTime().UnixNano()}, true
}

// stamps are the protected files' stamps as the checks begin. The guard
// after the checks compares the files' contents with the snapshot's, which
// a test that rewrites a protected file and puts it back before the checks
// end passes: a check running at the same time read the rewritten one. The
// stamps tell such a file.
type stamps map[string]stamp

// stampProtected stamps the protected files of s.
func (s fileSnapshot) stampProtected(dir string) stamps {
	st := make(stamps, len(s.protected))
	for name := range s.protected {
		if sp, ok := stampOf(filepath.Join(dir, name)); ok {
			st[name] = sp
		}
	}
	return st
}

// touched names the files whose stamps changed, sorted.
func (st stamps) touched(dir string) []string {
	var names []string
	for name, was := range st {
		if now, ok := stampOf(filepath.Join(dir, name)); !ok || now != was {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
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
