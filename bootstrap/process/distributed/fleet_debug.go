package distributed

import "github.com/tether/tether/cloud"

// What tether bench --distributed reads of a Fleet's processes beyond
// starting and killing them.

// ControllerDebug is member i's running process: its process ID and, with
// FleetConfig.MemberDebug, its metrics and profiling addresses; ok is
// false while it does not run.
func (f *Fleet) ControllerDebug(i int) (pid int, metricsAddr, pprofAddr string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.members[i]
	if m.proc == nil || m.proc.exited() {
		return 0, "", "", false
	}
	return m.proc.cmd.Process.Pid, m.metrics, m.pprof, true
}

// AgentPID is node n's agent's process ID (0 when it does not run).
func (f *Fleet) AgentPID(n cloud.NodeName) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.agents[n]
	if p == nil || p.exited() {
		return 0
	}
	return p.cmd.Process.Pid
}

// LogPath is the log file of the process named name ("etcd", "cloud",
// "controller-0", "agent-n1"): every incarnation's output, appended.
func (f *Fleet) LogPath(name string) string { return f.logPath(name) }

// ControllerAddr is the remote address member i advertises (the one the
// cluster's placement hashes).
func (f *Fleet) ControllerAddr(i int) string { return f.members[i].proxy.addr() }
