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
// handed to this one (see Adopt), and what those leave in turn as they
// die. Zombies are reaped. It returns how many processes it killed.
//
// The children's groups were killed when their leaders exited; it first
// waits (a second at most) until they are empty, so that what their
// members left has been handed over. Then it reads /proc only when this
// process has a child at all, which is seldom: nothing outside its own
// children is ever signalled.
func KillOrphans() (int, error) {
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
	self := os.Getpid()
	killed := 0
	deadline = time.Now().Add(time.Second)
	for hasChildren() {
		procs, err := os.ReadDir("/proc")
		if err != nil {
			return killed, fmt.Errorf("find orphaned processes: %w", err)
		}
		found := false
		for _, d := range procs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil || pid == self || isRunning(pid) {
				continue
			}
			st, err := readStat(pid)
			if err != nil || st.ppid != self {
				continue // gone meanwhile, or not a child
			}
			found = true
			if st.state != 'Z' {
				syscall.Kill(pid, syscall.SIGKILL)
				killed++
			}
			reap(pid)
		}
		// What is left is a child started meanwhile, or one being
		// waited for: not for this look.
		if !found || time.Now().After(deadline) {
			break
		}
	}
	return killed, nil
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

// reap waits for the child pid, killed or already a zombie.
func reap(pid int) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			return
		}
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
