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
// running when they exited: the processes handed to this one (see Adopt)
// and what is left of the children's process groups. What those leave is
// handed over in turn as they die, and killed too. Zombies are reaped. It
// returns how many processes it killed that had left their child's group.
//
// Only processes started since the first of those children are read
// (process ids grow until they wrap around, past four million on 64-bit
// Linux), so that a look costs a few files of /proc, not one per process
// on the machine; nothing outside this process's children and their
// groups is ever signalled.
func KillOrphans() (int, error) {
	groups := takeStarted()
	if len(groups) == 0 {
		return 0, nil
	}
	if !hasChildren() && !slices.ContainsFunc(groups, groupExists) {
		return 0, nil // the usual case: nothing left, and /proc unread
	}
	from := slices.Min(groups)
	self := os.Getpid()
	killed := 0
	deadline := time.Now().Add(time.Second)
	for {
		procs, err := os.ReadDir("/proc")
		if err != nil {
			return killed, fmt.Errorf("find orphaned processes: %w", err)
		}
		found, dying := false, false
		for _, d := range procs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil || pid < from || pid == self || isRunning(pid) {
				continue
			}
			st, err := readStat(pid)
			if err != nil {
				continue // gone meanwhile
			}
			switch {
			case st.ppid == self:
				found = true
				if st.state != 'Z' {
					syscall.Kill(pid, syscall.SIGKILL)
					// One still in a child's group was killed with
					// the group and is not gone yet: no stray.
					if !slices.Contains(groups, st.pgrp) {
						killed++
					}
				}
				reap(pid)
			case slices.Contains(groups, st.pgrp) && st.state != 'Z':
				// Killed with its group, and not yet gone: what it leaves
				// is handed over only once it is.
				syscall.Kill(pid, syscall.SIGKILL)
				dying = true
			}
		}
		if !found && !dying || time.Now().After(deadline) {
			return killed, nil
		}
		if !found {
			time.Sleep(time.Millisecond)
		}
	}
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
func groupExists(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
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
