package chaos

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// Machines going down and booting, the calm after the faults, and the
// ground truth the convergence is judged on.

// machine takes node n's machine down (its agent is SIGKILLed, its mounts
// vanish, then the cloud terminates, replaces or deletes its instance) or
// boots it. Machines stay as they are while the cloud's process is down.
func (r *distRunner) machine(kind string, n cloud.NodeName) error {
	if r.cloudDown {
		return nil
	}
	if kind == StartInstance {
		if !r.down[n] {
			return nil
		}
		r.noteAll("machine %s boots", n)
		delete(r.down, n)
		return r.powerOn(n)
	}
	if r.down[n] {
		return nil
	}
	r.count(kind)
	r.down[n] = true
	r.noteAll("machine %s goes down (%s)", n, kind)
	if err := r.powerOff(n, kind); err != nil {
		return err
	}
	inst, ok := r.cloud.InstanceOf(n)
	if !ok {
		return nil
	}
	switch kind {
	case Terminate:
		return r.cloud.Terminate(inst)
	case ReplaceInstance:
		if err := r.cloud.Delete(inst); err != nil {
			return err
		}
		_, err := r.cloud.AddInstanceChecked(n)
		return err
	default:
		return r.cloud.Delete(inst)
	}
}

// powerOff: the agent's process dies, every mount vanishes (recorded as
// the node going down), as when a machine loses power.
func (r *distRunner) powerOff(n cloud.NodeName, why string) error {
	if err := r.f.KillAgent(n); err != nil {
		return err
	}
	l, err := layout.New(r.f.NodeDir(n))
	if err == nil {
		err = agent.Reboot(r.f.NodeDir(n), mount.NewSymlink(l))
	}
	if err != nil {
		return fmt.Errorf("chaos: power off %s: %w", n, err)
	}
	r.tl.add(record{kind: recNodeDown, node: n, text: why})
	return nil
}

// powerOn: the instance runs (a new one if it has none) and the agent
// starts, reconstructing from the directories its mounts left.
func (r *distRunner) powerOn(n cloud.NodeName) error {
	inst, ok := r.cloud.InstanceOf(n)
	if !ok {
		var err error
		if inst, err = r.cloud.AddInstanceChecked(n); err != nil {
			return err
		}
	}
	if err := r.cloud.Start(inst); err != nil {
		return err
	}
	if r.f.AgentRunning(n) {
		return nil
	}
	r.restarts++
	return r.f.StartAgent(n)
}

// calm ends every fault: faults off, the partition healed, the
// misconfigured member ended (and judged), every process
// and machine up; then it asks for the whole desired state again (a call
// of the churn that failed may or may not have taken effect).
func (r *distRunner) calm() error {
	if err := r.cloudFault(CalmCloud); err != nil {
		return err
	}
	if r.cut >= 0 {
		if err := r.partition(Heal, r.cut); err != nil {
			return err
		}
	}
	if err := r.endMisconfigured(); err != nil {
		return err
	}
	if err := r.cloudProcess(StartCloud); err != nil {
		return err
	}
	for i := range r.cfg.Controllers {
		if err := r.member(StartMember, i); err != nil {
			return err
		}
	}
	for _, n := range r.nodes {
		if r.down[n] {
			delete(r.down, n)
			if err := r.powerOn(n); err != nil {
				return err
			}
			continue
		}
		if !r.f.AgentRunning(n) {
			r.restarts++
			if err := r.f.StartAgent(n); err != nil {
				return err
			}
		}
	}
	return r.reassert()
}

// reassert applies every desired workload and deletes every other one
// ever created.
func (r *distRunner) reassert() error {
	var docs []*messages.Document
	for _, uid := range slices.Sorted(maps.Keys(r.wls)) {
		docs = append(docs, workloadDoc(r.wls[uid]))
	}
	if len(docs) > 0 {
		if err := until(60*time.Second, "chaos: calm", func() error { return r.apply(10*time.Second, docs...) }); err != nil {
			return err
		}
	}
	for _, uid := range slices.Sorted(maps.Keys(r.created)) {
		if _, ok := r.wls[uid]; ok {
			continue
		}
		if err := until(60*time.Second, "chaos: calm", func() error { return r.deleteWorkload(10*time.Second, uid) }); err != nil {
			return err
		}
	}
	return nil
}

// diff compares the ground truth with the desired state: the cloud's
// attachments, asked now, and the mounts on each node's disk.
func (r *distRunner) diff() []Violation {
	atts, err := r.cloud.Attachments()
	if err != nil {
		return []Violation{{Detail: "cloud: " + err.Error()}}
	}
	nodeOf := map[cloud.InstanceID]cloud.NodeName{}
	for _, n := range r.nodes {
		if in, ok := r.cloud.InstanceOf(n); ok {
			nodeOf[in] = n
		}
	}
	return diffTruth(r.wls, r.cfg.Volumes, r.nodes, atts, nodeOf, r.diskMounts)
}

// diskMounts reads the stages and publishes on node n's disk.
func (r *distRunner) diskMounts(n cloud.NodeName) ([]found, error) {
	l, err := layout.New(r.f.NodeDir(n))
	if err != nil {
		return nil, err
	}
	return mountsOnDisk(r.f.NodeDir(n), mount.NewSymlink(l))
}
