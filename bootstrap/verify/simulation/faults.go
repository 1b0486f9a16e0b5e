package simulation

import (
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// killable is an actor the fault schedule may kill.
type killable interface {
	actorSim
	kill()
	start()
}

// Kinds of FaultEvery events, in the order of Faults.weights.
const (
	fKill = iota
	fTerminate
	fReboot
	fReplace
	fDelete
	fPartition
	fOutOfService
	fConsoleDetach
	fNodeDelete
	fControllerRestart
)

// scheduleFault plans the next fault of the faulty phase (Faults.weights).
// Each draws the same values, whatever it turns out to be.
func (w *world) scheduleFault() {
	ws := w.cfg.Faults.weights()
	total := 0
	for _, x := range ws {
		total += x
	}
	if w.cfg.Faults.FaultEvery <= 0 || total <= 0 {
		return
	}
	s := w.plan.site("faults")
	w.after(s.exp(w.cfg.Faults.FaultEvery), func() {
		if w.calm {
			return
		}
		k, target, length := s.index(total), s.float(), s.float()
		x := w.plan.site("faults detail").float() // its own stream: the draws above stay as they were
		kind := 0
		for ; k >= ws[kind]; kind++ {
			k -= ws[kind]
		}
		w.injectFault(s, kind, target, length, x)
		w.scheduleFault()
	})
}

// injectFault applies one fault of kind on the node (or actor) target
// picks; length sets its duration within the kind's range, x any further
// choice (which volume, what follows).
func (w *world) injectFault(s *site, kind int, target, length, x float64) {
	n := w.nodeNs[pickOf(target, len(w.nodeNs))]
	span := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(length*float64(hi-lo)) }
	switch kind {
	case fKill:
		w.killOne(s, target, length)
	case fTerminate:
		w.terminate(s, n, span(20*time.Second, 150*time.Second), "terminate")
	case fReboot:
		w.terminate(s, n, span(time.Second, w.cfg.SyncPeriod/2), "reboot")
	case fReplace:
		w.replace(s, n, span(5*time.Second, 120*time.Second))
	case fDelete:
		w.deleteInstance(s, n, span(10*time.Second, 180*time.Second), x)
	case fPartition:
		w.partition(s, n, span(30*time.Second, 200*time.Second))
	case fOutOfService:
		w.markOutOfService(s, n)
	case fConsoleDetach:
		w.consoleDetach(s, n, x)
	case fNodeDelete:
		if !w.nodeDeleted[n] && len(w.liveNodes()) > 1 && w.take(s) {
			w.deleteNode(n)
		}
	case fControllerRestart:
		if w.take(s) {
			w.restartController(s, span(500*time.Millisecond, 5*time.Second))
		}
	}
}

// killable lists every actor, in a fixed order.
func (w *world) killables() []killable {
	var out []killable
	for _, v := range w.volIDs {
		out = append(out, w.vols[v])
	}
	for _, n := range w.nodeNs {
		out = append(out, w.nodes[n], w.agents[n])
	}
	return append(out, w.sync)
}

// killOne kills an actor; it comes back after a restart delay (unless the
// controller restarted meanwhile and brought it back).
func (w *world) killOne(s *site, target, length float64) {
	all := w.killables()
	k := all[pickOf(target, len(all))]
	delay := 500*time.Millisecond + time.Duration(length*float64(4500*time.Millisecond))
	if !k.isAlive() || !w.take(s) {
		return
	}
	w.fault("kill %s (restart in %s)", w.nameOf(k), delay)
	w.kills++
	k.kill()
	epoch := w.ctrlEpoch
	_, agent := k.(*agentSim)
	w.after(delay, func() {
		if !k.isAlive() && (agent || epoch == w.ctrlEpoch) {
			k.start()
		}
	})
}

func (w *world) nameOf(k killable) string {
	switch a := k.(type) {
	case *volSim:
		return a.addr().String()
	case *nodeSim:
		return a.addr().String()
	case *agentSim:
		return a.addr().String()
	}
	return syncAddr.String()
}

// partition cuts a node's agent off the controller for a while.
func (w *world) partition(s *site, n cloud.NodeName, d time.Duration) {
	if w.partitioned(n) || !w.take(s) {
		return
	}
	w.fault("partition %s for %s", n, d)
	w.partitions[n] = w.now.Add(d)
}

// markOutOfService marks a node cut off (partitioned, or its machine
// down) out of service, as an operator would; the mark is lifted at the
// calm.
func (w *world) markOutOfService(s *site, n cloud.NodeName) {
	if w.outOfSvc[n] || !(w.partitioned(n) || !w.machineUp(n)) || !w.take(s) {
		return
	}
	w.fault("mark %s out of service", n)
	w.outOfSvc[n] = true
	w.send(desiredAddr, nodeAddr(n), &messages.SetOutOfService{Node: string(n), OutOfService: true})
}

// beginCalm stops the faults: partitions heal, marks are lifted, machines
// come back (calmMachines); from now on I5 is probed every second.
func (w *world) beginCalm() {
	w.calm, w.plan.calm = true, true
	w.tracef("CALM: no more faults")
	clear(w.partitions)
	for _, n := range sortedKeys(w.outOfSvc) {
		w.send(desiredAddr, nodeAddr(n), &messages.SetOutOfService{Node: string(n), OutOfService: false})
	}
	clear(w.outOfSvc)
	w.calmMachines()
	w.probe()
}

// probe checks I5 every second of the calm, and makes sure, as an
// operator would, that the lifted out-of-service marks reached the store.
func (w *world) probe() {
	w.checkConverged(false)
	for _, n := range w.nodeNs {
		if st, ok, _ := w.st.NodeStatus(n); ok && st.OutOfService && w.now.Sub(w.calmAt) > 10*time.Second {
			w.send(desiredAddr, nodeAddr(n), &messages.SetOutOfService{Node: string(n), OutOfService: false})
		}
	}
	w.after(time.Second, w.probe)
}
