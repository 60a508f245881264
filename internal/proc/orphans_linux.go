package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// Adopt makes this process the reaper of its descendants' orphans: a
// process whose parent exits is handed to it rather than to init, even one
// that left its process group and session (setsid, a double fork), so that
// KillOrphans can find it. It lasts as long as the process.
func Adopt() error {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return fmt.Errorf("become the reaper of orphaned processes: %w", errno)
	}
	return nil
}

// KillOrphans kills what the children started since it last ran left
// running out of their process groups when they exited: the processes
// handed to this one (see Adopt), and what those start or leave in turn
// as they die. Zombies are reaped. It returns how many processes it
// killed, and how many of those were still running when it gave up, a few
// seconds on: a process stuck in the kernel, or orphans that fork faster
// than they can be killed.
//
// The children's groups were killed when their leaders exited; it first
// waits (a second at most) until they are empty, so that what their
// members left has been handed over. Then it reads /proc only when this
// process has a child at all, which is seldom: nothing outside its own
// children is ever signalled.
func KillOrphans() (killed, left int, err error) {
	groups := takeStarted()
	deadline := time.Now().Add(time.Second)
	for {
		// A member killed with its group after its parent exited was
		// handed over, and stays in the group as a zombie until reaped.
		for _, g := range groups {
			reapGroup(g)
		}
		if !slices.ContainsFunc(groups, groupExists) || !time.Now().Before(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// Each pass kills every orphan it finds before it waits for any: a
	// killed process that another one traces is reported to its tracer
	// first, and cannot be reaped before the tracer lets it go, which an
	// orphan left to run would do only when it pleases. What a killed
	// process started before it died is handed over, for the next pass.
	signalled := make(map[int]bool)
	deadline = time.Now().Add(orphansTimeout)
	for hasChildren() {
		live, dying, err := killPass(signalled)
		if err != nil {
			return len(signalled), 0, err
		}
		if live == 0 && dying == 0 {
			break
		}
		if !time.Now().Before(deadline) {
			return len(signalled), live, nil
		}
		time.Sleep(time.Millisecond)
	}
	return len(signalled), 0, nil
}

// orphansTimeout bounds how long KillOrphans kills and reaps orphans, so
// that no process can hold ralph up: a killed process dies at once unless
// it is stuck in the kernel.
const orphansTimeout = 5 * time.Second

// killPass sends SIGKILL to every child of this process that is neither a
// zombie nor one started and not yet waited for, noting each in signalled,
// then reaps the zombies without waiting for any. It returns how many
// children it found running (killed now, or earlier and not yet dead) and
// how many zombies it could not reap yet: one traced by a process that
// has not let it go, or a leader whose other threads are still exiting
// (they may have children yet to be handed over).
func killPass(signalled map[int]bool) (live, dying int, err error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, fmt.Errorf("find orphaned processes: %w", err)
	}
	self := os.Getpid()
	var zombies []int
	for _, d := range procs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == self || isRunning(pid) {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.ppid != self {
			continue // gone meanwhile, or not a child
		}
		if st.state == 'Z' {
			zombies = append(zombies, pid)
			continue
		}
		syscall.Kill(pid, syscall.SIGKILL)
		signalled[pid] = true
		live++
	}
	for _, pid := range zombies {
		if !reap(pid) {
			dying++
		}
	}
	return live, dying, nil
}

// hasChildren reports whether this process has any child, running or a
// zombie, without reaping one (an orphan handed over is a child).
func hasChildren() bool {
	const pAll = 0
	var info [128]byte // siginfo_t
	_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&info[0])),
		syscall.WEXITED|syscall.WNOHANG|syscall.WNOWAIT, 0, 0)
	return errno != syscall.ECHILD
}

// groupExists reports whether any process is left in the group pgid.
func groupExists(pgid int) bool { return exists(-pgid) }

// reapGroup reaps the children of this process in the group pgid that have
// exited, without waiting for the others.
func reapGroup(pgid int) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}

// reap reaps the zombie child pid if it can be reaped now, without
// waiting: it reports whether pid is gone.
func reap(pid int) bool {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		return got == pid || err != nil
	}
}

// stat is what /proc/PID/stat says of a process that KillOrphans needs.
type stat struct {
	state      byte
	ppid, pgrp int
}

// readStat reads /proc/PID/stat, whose second field (the command name, in
// parentheses) may hold spaces and parentheses.
func readStat(pid int) (stat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return stat{}, errors.New("malformed stat")
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 3 || len(fields[0]) != 1 {
		return stat{}, errors.New("malformed stat")
	}
	ppid, err1 := strconv.Atoi(fields[1])
	pgrp, err2 := strconv.Atoi(fields[2])
	if err1 != nil || err2 != nil {
		return stat{}, errors.New("malformed stat")
	}
	return stat{state: fields[0][0], ppid: ppid, pgrp: pgrp}, nil
}
