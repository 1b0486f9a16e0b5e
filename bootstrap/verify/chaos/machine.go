package chaos

import (
	"fmt"

	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/agent"
)

// PowerOff takes node n down as a machine that loses power: its agent stops
// (waiting at most its StopGrace for the mount operations in progress) and every mount it had
// vanishes, leaving the empty directories a reboot leaves; chk (if set)
// records it. It does not touch the cloud: the caller terminates, replaces
// or deletes the instance afterwards, so that nothing mounts on a machine
// the cloud has already taken away.
func PowerOff(e *process.Embedded, chk *Checker, n cloud.NodeName, why string) error {
	if _, ok := e.Agents[n]; ok {
		if err := e.StopAgent(n); err != nil {
			return err
		}
	}
	if err := vanish(e, n); err != nil {
		return err
	}
	if chk != nil {
		chk.NodeDown(n, why)
	}
	return nil
}

// PowerOn boots node n again, on either cloud: its instance runs (started
// if stopped, a new one if it has none) and its agent starts,
// reconstructing from the workload directories whose mounts vanished.
func PowerOn(e *process.Embedded, n cloud.NodeName) error {
	a := e.Account
	inst, ok := a.InstanceOf(n)
	switch {
	case !ok:
		if _, err := a.AddInstanceChecked(n); err != nil {
			return err
		}
	case !a.Running(inst):
		if err := a.Start(inst); err != nil {
			return err
		}
	}
	if _, ok := e.Agents[n]; ok {
		return nil
	}
	return e.StartAgent(n)
}

// vanish removes every mount under n's data directory and puts an empty
// directory where each was, as after a reboot.
func vanish(e *process.Embedded, n cloud.NodeName) error {
	m, err := e.Mounter(n)
	if err == nil {
		err = agent.Reboot(e.NodeDir(n), m)
	}
	if err != nil {
		return fmt.Errorf("chaos: power off %s: %w", n, err)
	}
	return nil
}
