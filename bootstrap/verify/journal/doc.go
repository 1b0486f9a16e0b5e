// Package journal records what a process does, where it does it, for a
// checker in another process: one JSON line per Record, appended with one
// write(2) to a file opened O_APPEND, so that a process killed by SIGKILL
// loses no record it wrote (the kernel has it). Each record carries the
// wall-clock time it was written at; processes on one machine share that
// clock, so records of several journals merge into one timeline by time.
//
// It owns the format and the kinds of records, never their meaning: the
// chaos checker (bootstrap/verify/chaos) judges them. It imports nothing of
// tether's.
package journal
