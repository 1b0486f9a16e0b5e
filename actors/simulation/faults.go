package simulation

import (
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// killable is an actor the fault schedule may kill.
type killable interface {
	actorSim
	kill()
	start()
}

// scheduleFault plans the next kill, termination, partition or
// out-of-service mark of the faulty phase. Each draws the same values,
// whatever it turns out to be.
func (w *world) scheduleFault() {
	f := w.cfg.Faults
	total := f.KillWeight + f.TerminateWeight + f.PartitionWeight + f.OutOfServiceWeight
	if f.FaultEvery <= 0 || total <= 0 {
		return
	}
	s := w.plan.site("faults")
	w.after(s.exp(f.FaultEvery), func() {
		if w.calm {
			return
		}
		kind, target, length := s.index(total), s.float(), s.float()
		n := w.nodeNs[pickOf(target, len(w.nodeNs))]
		switch {
		case kind < f.KillWeight:
			w.killOne(s, target, length)
		case kind < f.KillWeight+f.TerminateWeight:
			w.terminate(s, n, 20*time.Second+time.Duration(length*float64(130*time.Second)))
		case kind < f.KillWeight+f.TerminateWeight+f.PartitionWeight:
			w.partition(s, n, 30*time.Second+time.Duration(length*float64(170*time.Second)))
		default:
			w.markOutOfService(s, n)
		}
		w.scheduleFault()
	})
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

// killOne kills an actor; it comes back after a restart delay.
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
	w.after(delay, k.start)
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

// terminate stops a node's instance: the cloud detaches everything, the
// agent goes down with the machine and the mounts are gone (half-done
// directories remain). The instance starts again later.
func (w *world) terminate(s *site, n cloud.NodeName, down time.Duration) {
	if w.terminated[n] || !w.take(s) {
		return
	}
	w.fault("terminate the instance of %s (start in %s)", n, down)
	if a := w.agents[n]; a.alive {
		a.crash()
	}
	w.disks[n].reboot()
	w.terminated[n] = true
	must(w.cloud.Terminate(w.instance(n)))
	w.after(down, func() { w.startInstance(n) })
}

func (w *world) startInstance(n cloud.NodeName) {
	if !w.terminated[n] {
		return
	}
	w.tracef("instance of %s starts", n)
	must(w.cloud.Start(w.instance(n)))
	w.terminated[n] = false
	w.after(w.plan.site("boot "+string(n)).uniform(time.Second, 10*time.Second), w.agents[n].start)
}

// partition cuts a node's agent off the controller for a while.
func (w *world) partition(s *site, n cloud.NodeName, d time.Duration) {
	if w.partitioned(n) || !w.take(s) {
		return
	}
	w.fault("partition %s for %s", n, d)
	w.partitions[n] = w.now.Add(d)
}

// markOutOfService marks a node cut off (partitioned or terminated) out of
// service, as an operator would; the mark is lifted at the calm.
func (w *world) markOutOfService(s *site, n cloud.NodeName) {
	if w.outOfSvc[n] || !(w.partitioned(n) || w.terminated[n]) || !w.take(s) {
		return
	}
	w.fault("mark %s out of service", n)
	w.outOfSvc[n] = true
	w.send(desiredAddr, nodeAddr(n), nodestatus.OutOfServiceSet{OutOfService: true})
}

// beginCalm stops the faults: partitions heal, marks are lifted, instances
// start; from now on I5 is probed every second.
func (w *world) beginCalm() {
	w.calm, w.plan.calm = true, true
	w.tracef("CALM: no more faults")
	clear(w.partitions)
	for _, n := range sortedKeys(w.outOfSvc) {
		w.send(desiredAddr, nodeAddr(n), nodestatus.OutOfServiceSet{OutOfService: false})
	}
	clear(w.outOfSvc)
	for _, n := range w.nodeNs {
		w.startInstance(n)
	}
	w.probe()
}

// probe checks I5 every second of the calm, and makes sure, as an
// operator would, that the lifted out-of-service marks reached the store.
func (w *world) probe() {
	w.checkConverged(false)
	for _, n := range w.nodeNs {
		if st, ok, _ := w.st.NodeStatus(n); ok && st.OutOfService && w.now.Sub(w.calmAt) > 10*time.Second {
			w.send(desiredAddr, nodeAddr(n), nodestatus.OutOfServiceSet{OutOfService: false})
		}
	}
	w.after(time.Second, w.probe)
}
