package mount

import (
	"os"
	"syscall"
	"testing"
)

// BenchmarkCycle measures one volume's life on a node, as the agent runs
// it (stage, publish for a new workload, unpublish, unstage; see cycle),
// with each mounter: "paths" is the path-by-path code with
// CleanEmptyParents after each undo (the agent before pods/ and mounts/
// were kept; as on a kernel without openat2), "tree" the code relative
// to the held directories. The ratio of the two is what the tree saves;
// syscalls/cycle is counted by the mounters; cpu-ns/cycle is the
// process's user and system time (steadier than ns/op on a shared
// machine, where a descheduled thread's wait counts in ns/op). The bind
// mounter needs root.
func BenchmarkCycle(b *testing.B) {
	for _, mounter := range []string{"symlink", "bind"} {
		for _, mode := range []struct {
			name   string
			legacy bool
		}{{"paths", true}, {"tree", false}} {
			b.Run(mounter+"/"+mode.name, func(b *testing.B) {
				if mounter == "bind" && os.Geteuid() != 0 {
					b.Skip("bind mounts need root")
				}
				c := newCycle(b, mounter, mode.legacy)
				before, n, cpu0 := Syscalls(), 0, cpuTime()
				for b.Loop() {
					n++
					c.run(b, func(_ string, f func() error) { mustB(b, f()) })
				}
				var calls int64
				for _, oc := range SyscallsSince(before) {
					calls += oc.Total()
				}
				b.ReportMetric(float64(calls)/float64(n), "syscalls/cycle")
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(n), "cpu-ns/cycle")
			})
		}
	}
}

// cpuTime is the process's user and system time so far, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
