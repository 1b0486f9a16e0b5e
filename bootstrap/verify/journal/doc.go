// Package journal records what a process does, where it does it, for a
// checker in another process: one JSON line per Record, appended with one
// write(2) to a file opened O_APPEND, so a process killed by SIGKILL loses
// no record it wrote. Records carry the wall-clock time, which processes
// on one machine share, so several journals merge into one timeline.
//
// It owns the format and the kinds of records, never their meaning (the
// chaos checker judges them), and imports nothing of tether's.
//
// See docs/chaos-and-simulation.md#across-processes-tether-chaos---distributed.
package journal
