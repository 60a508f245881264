package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// KillStrays kills what a ralph that died left running: every process, other
// than this one and its group, whose environment (as it was when the process
// started) holds every one of env ("KEY=value") and that is dir's: its
// DirVar names dir, by this path or another, or, when it has no DirVar,
// its $PWD or working directory is dir or below it. Its process group goes
// with it when the group's leader is gone or matches too, so that a group
// is never killed for a member that merely joined it. It returns the ids
// of the processes it found.
//
// The environment is the proof: a process id written down earlier may
// belong to anything by now, but a process that carries the environment
// ralph gave one iteration's agent, for this directory, is that agent or
// one of its children (even one that left the agent's process group, or
// the directory). Where a process works is no proof: a project may hold
// another in a directory of its own, whose ralph's iteration may have the
// same number and story as this one's, and its agent works below dir.
// Only a process started by a ralph older than DirVar is known by where
// it works, so that one left running is still killed after an upgrade.
func KillStrays(dir string, env []string) ([]int, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("find stray processes: %w", err)
	}
	s := strays{dirs: []string{filepath.Clean(dir)}, env: env}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != s.dirs[0] {
		s.dirs = append(s.dirs, real)
	}
	if info, err := os.Stat(dir); err == nil {
		s.info = info
	}
	self, ownGroup := os.Getpid(), syscall.Getpgrp()
	var found []int
	groups := map[int]bool{} // process group → may be killed whole
	for _, d := range procs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == self {
			continue
		}
		if !s.matches(pid) {
			continue
		}
		found = append(found, pid)
		if pgid, err := processGroup(pid); err == nil && pgid != ownGroup {
			if _, seen := groups[pgid]; !seen {
				groups[pgid] = pgid == pid || !exists(pgid) || s.matches(pgid)
			}
		}
	}
	var errs []error
	for _, pid := range found {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill %d: %w", pid, err))
		}
	}
	for pgid, whole := range groups {
		if whole {
			if err := signalGroup(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
				errs = append(errs, fmt.Errorf("kill group %d: %w", pgid, err))
			}
		}
	}
	slices.Sort(found)
	return found, errors.Join(errs...)
}

// strays are what KillStrays looks for.
type strays struct {
	// dirs are the directory, and its path with the symbolic links
	// resolved when that differs.
	dirs []string
	// info is the directory's, to know it by any other path (a link to
	// it, a bind mount); nil when it cannot be read.
	info os.FileInfo
	env  []string
}

// matches reports whether process pid started with every variable of env and
// is of the directory. Processes that cannot be read (another user's, or
// gone) do not match.
func (s *strays) matches(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || len(data) == 0 {
		return false
	}
	vars := bytes.Split(data, []byte{0})
	for _, kv := range s.env {
		if !slices.ContainsFunc(vars, func(v []byte) bool { return string(v) == kv }) {
			return false
		}
	}
	var where []string
	for _, v := range vars {
		if named, ok := strings.CutPrefix(string(v), DirVar+"="); ok {
			// The variable says whose the process is, wherever it
			// works: the first, as getenv reads it.
			return s.isDir(named)
		}
		if pwd, ok := strings.CutPrefix(string(v), "PWD="); ok {
			where = append(where, pwd)
		}
	}
	if cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd"); err == nil {
		where = append(where, cwd)
	}
	for _, w := range where {
		for _, d := range s.dirs {
			if w == d || strings.HasPrefix(w, d+"/") {
				return true
			}
		}
	}
	return false
}

// isDir reports whether path, a process's DirVar, names the directory:
// the same path, or another to the same directory. A path that is not
// absolute names nothing, as ralph never gives one.
func (s *strays) isDir(path string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	if slices.Contains(s.dirs, filepath.Clean(path)) {
		return true
	}
	info, err := os.Stat(path)
	return err == nil && s.info != nil && os.SameFile(info, s.info)
}

// processGroup reads the process group of pid.
func processGroup(pid int) (int, error) {
	st, err := readStat(pid)
	return st.pgrp, err
}

// exists reports whether pid names a process (a process group, when
// negative), whoever's it is.
func exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Holders returns the ids of the processes that have the file at path open.
// Processes whose open files cannot be read (another user's) are not seen.
func Holders(path string) ([]int, error) {
	want, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(want); err == nil {
		want = real
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("find holders of %s: %w", path, err)
	}
	var pids []int
	for _, d := range procs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fdDir := "/proc/" + d.Name() + "/fd"
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if target, err := os.Readlink(fdDir + "/" + fd.Name()); err == nil && target == want {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}
