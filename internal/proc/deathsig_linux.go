package proc

import "syscall"

// setDeathSignal makes the kernel SIGKILL the child when ralph dies, however
// it dies (kill -9 included), so that an agent never works on unnoticed
// after the ralph that judged it is gone. It reaches the group leader only:
// what the leader started is found and killed by the next ralph (see
// KillStrays).
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
