package distributed

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/tether/tether/cloud"
)

// What tether chaos --distributed needs of a Fleet beyond starting and
// killing its processes (FleetConfig.Chaos).

// StopAgent stops node n's agent as an operator would (SIGTERM: the agent
// waits for its mount calls, up to its grace), or SIGKILLs it after a
// grace of its own. Its mounts stay.
func (f *Fleet) StopAgent(n cloud.NodeName) error {
	f.mu.Lock()
	p := f.agents[n]
	delete(f.agents, n)
	f.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.stop(10 * time.Second)
}

// AgentJournal is the journal of node n's latest agent process ("" without
// FleetConfig.Chaos).
func (f *Fleet) AgentJournal(n cloud.NodeName) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.journals["agent-"+string(n)]
}

// JournalFiles lists every journal written so far (FleetConfig.Chaos).
func (f *Fleet) JournalFiles() ([]string, error) {
	return filepath.Glob(filepath.Join(f.cfg.Dir, "journals", "*.jsonl"))
}

// ControllerRunning reports whether member i's process runs.
func (f *Fleet) ControllerRunning(i int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.members[i].proc
	return p != nil && !p.exited()
}

// AgentRunning reports whether node n's agent process runs.
func (f *Fleet) AgentRunning(n cloud.NodeName) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.agents[n]
	return p != nil && !p.exited()
}

// ControlController sends c to member i (FleetConfig.Chaos).
func (f *Fleet) ControlController(i int, c Command) error {
	f.mu.Lock()
	p := f.members[i].proc
	f.mu.Unlock()
	return sendTo(p, fmt.Sprintf("controller-%d", i), c)
}

// ControlAgent sends c to node n's agent (FleetConfig.Chaos).
func (f *Fleet) ControlAgent(n cloud.NodeName, c Command) error {
	f.mu.Lock()
	p := f.agents[n]
	f.mu.Unlock()
	return sendTo(p, "agent-"+string(n), c)
}

func sendTo(p *proc, name string, c Command) error {
	if p == nil {
		return fmt.Errorf("fleet: %s is not running", name)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return p.send(b)
}
