package simulation

import (
	"time"

	"github.com/tether/tether/cloud"
)

// machine is the state of a node's machine: the cloud instance backing it
// and the agent running on it.
type machine uint8

const (
	machineUp        machine = iota // running: its agent runs (or restarts)
	machineStopped                  // terminated; the same instance starts again
	machineReplacing                // terminated; a new instance will back the node
	machineGone                     // deleted for good: no instance backs the node
)

func (m machine) String() string {
	return [...]string{"up", "stopped", "replacing", "gone"}[m]
}

// setMachine changes n's machine state; actions scheduled for an earlier
// state (a start, a replacement) see the generation change and do nothing.
func (w *world) setMachine(n cloud.NodeName, m machine) int {
	w.machines[n] = m
	w.machineGen[n]++
	return w.machineGen[n]
}

func (w *world) machineUp(n cloud.NodeName) bool { return w.machines[n] == machineUp }

// powerOff takes n's machine down with its instance terminated: the cloud
// detaches everything (ReasonTerminate), the agent goes down with the
// machine and, as after a reboot, every mount is left half-done.
func (w *world) powerOff(n cloud.NodeName) {
	w.agents[n].crash()
	w.disks[n].reboot()
	must(w.cloud.Terminate(w.instance(n)))
}

// terminate stops n's instance; the same instance starts after down (a
// short down: it comes back between two sync passes).
func (w *world) terminate(s *site, n cloud.NodeName, down time.Duration, what string) {
	if !w.machineUp(n) || !w.take(s) {
		return
	}
	w.fault("%s the instance of %s (start in %s)", what, n, down)
	w.powerOff(n)
	gen := w.setMachine(n, machineStopped)
	w.after(down, func() {
		if w.machineGen[n] == gen {
			w.startInstance(n)
		}
	})
}

func (w *world) startInstance(n cloud.NodeName) {
	w.tracef("instance of %s starts", n)
	must(w.cloud.Start(w.instance(n)))
	w.setMachine(n, machineUp)
	w.boot(n)
}

// boot starts the agent of n's machine after the machine's boot time.
func (w *world) boot(n cloud.NodeName) {
	gen := w.machineGen[n]
	w.after(w.plan.site("boot "+string(n)).uniform(time.Second, 10*time.Second), func() {
		if w.machineGen[n] == gen {
			w.agents[n].start()
		}
	})
}

// replace terminates n's instance; after down a new instance (a new
// InstanceID) backs the node and its agent boots there. The controller's
// cache keeps naming the old instance until a call or the sync says it is
// gone.
func (w *world) replace(s *site, n cloud.NodeName, down time.Duration) {
	if !w.machineUp(n) || !w.take(s) {
		return
	}
	w.fault("replace the instance of %s (new instance in %s)", n, down)
	w.powerOff(n)
	gen := w.setMachine(n, machineReplacing)
	w.after(down, func() {
		if w.machineGen[n] == gen {
			w.replaceInstance(n)
		}
	})
}

// replaceInstance gives n a new running instance (the old one, if any, is
// forgotten by the cloud) and boots its agent.
func (w *world) replaceInstance(n cloud.NodeName) {
	id, err := w.cloud.Replace(n)
	must(err)
	w.tracef("instance %s now backs %s", id, n)
	w.setMachine(n, machineUp)
	w.boot(n)
}

// deleteInstance deletes n's instance for good: its attachments vanish
// (ReasonDelete), the agent and the machine's disk are gone, and calls
// naming the instance fail NotFound. What follows is a decision of its
// own (x): a new instance for the node after a while, or the node and its
// workloads deleted from the desired state, as an operator would.
func (w *world) deleteInstance(s *site, n cloud.NodeName, after time.Duration, x float64) {
	if !w.machineUp(n) || !w.take(s) {
		return
	}
	w.fault("delete the instance of %s for good", n)
	w.agents[n].crash()
	w.disks[n] = newDisk()
	must(w.cloud.Delete(w.instance(n)))
	gen := w.setMachine(n, machineGone)
	then := w.plan.site("aftermath " + string(n))
	w.after(after, func() {
		if w.calm || w.machineGen[n] != gen || !w.take(then) {
			return
		}
		if x < 0.5 {
			w.fault("a new instance for %s", n)
			w.replaceInstance(n)
			return
		}
		w.deleteNode(n)
	})
}

// consoleDetach detaches one of the volumes attached to n's instance from
// the cloud's side while the machine keeps running: a mount there outlives
// its device.
func (w *world) consoleDetach(s *site, n cloud.NodeName, x float64) {
	inst := w.instance(n)
	got, _ := w.cloud.InstanceVolumes(bg, []cloud.InstanceID{inst})
	vols := sortedKeys(got[inst])
	if !w.machineUp(n) || len(vols) == 0 || !w.take(s) {
		return
	}
	v := vols[pickOf(x, len(vols))]
	w.fault("detach %s from %s in the cloud console (disk %v)", v, n, w.disks[n])
	must(w.cloud.ConsoleDetach(v, inst))
}

// calmMachines brings every machine back at the calm: stopped instances
// start, replacements happen, and a node still in the desired state whose
// instance was deleted gets a new one. A deleted node's deleted machine
// stays gone.
func (w *world) calmMachines() {
	for _, n := range w.nodeNs {
		switch w.machines[n] {
		case machineStopped:
			w.startInstance(n)
		case machineReplacing:
			w.replaceInstance(n)
		case machineGone:
			if !w.nodeDeleted[n] {
				w.replaceInstance(n)
			}
		}
	}
}
