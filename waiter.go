package main

import (
	"os"
	"runtime"
)

// waiter tunes the scheduler for `ralph loop`, which spends its life
// waiting: for the agent, for the checks, for the disk. Its own steps run
// one after another, and the goroutines around a child (its pipes, its
// wait, the background syncs) each wake up briefly. With a second
// processor, every such wake-up while the first is busy starts another
// thread on another CPU, which finds nothing to do and sleeps again: a
// dozen thread switches an iteration, on the CPUs the agent and the checks
// need, for nothing. With one, the goroutines take turns on one thread; a
// goroutine blocked in a system call hands the processor to another
// thread, so the others still run. The work that does use two CPUs, the
// read and decode of a very long prd.json, is for the brief commands. A
// GOMAXPROCS in the environment has the last word.
func waiter() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}
