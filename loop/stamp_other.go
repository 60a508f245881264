//go:build !linux && !darwin

package loop

import "syscall"

// changeTime is 0 where ralph does not know the field that holds a file's
// status change time: its stamp is its inode and its modification time.
func changeTime(*syscall.Stat_t) int64 { return 0 }
