package chaos

import (
	"fmt"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// cloudMethods are the provider calls cloud faults apply to.
var cloudMethods = []sim.Method{sim.MethodAttach, sim.MethodDetach, sim.MethodInstanceVolumes, sim.MethodVolumesAreAttached}

// fault turns on a cloud or store fault (until the next CalmCloud), or
// detaches a volume from the cloud's side.
func (r *runner) fault(a Action) error {
	cl := r.e.Cloud
	if a.Kind != CalmCloud {
		r.count(a.Kind)
	}
	switch a.Kind {
	case CloudErrors:
		for _, m := range cloudMethods {
			cl.SetErrorRate(m, 0.3, cloud.KindRetryable)
		}
	case LatencySpike:
		cl.SetLatency(30 * time.Millisecond)
	case Throttle:
		cl.SetThrottle(30, 5)
	case ReplyLoss:
		for _, m := range cloudMethods {
			cl.SetReplyLoss(m, 0.2)
		}
	case HangCalls:
		for _, m := range []sim.Method{sim.MethodAttach, sim.MethodDetach} {
			cl.SetHangRate(m, 0.2)
		}
	case StoreFailures:
		r.chk.SetStoreFailRate(0.5, r.cfg.Seed)
	case ConsoleDetach:
		return r.consoleDetach(volName(a.Volume))
	case CalmCloud:
		r.calmCloud()
	default:
		return fmt.Errorf("chaos: unknown action %q", a.Kind)
	}
	return nil
}

func (r *runner) count(kind string) {
	r.rep.Faults++
	r.rep.FaultsByKind[kind]++
}

// consoleDetach detaches vol from the first instance it is attached to, as
// an operator in the cloud's console would. The runner notes it BEFORE.
func (r *runner) consoleDetach(vol cloud.VolumeID) error {
	on := r.e.Cloud.Attachments()[vol]
	if len(on) == 0 {
		return nil
	}
	r.chk.Note(vol, "console detach from %s", on[0])
	return r.e.Cloud.ConsoleDetach(vol, on[0])
}

func (r *runner) calmCloud() {
	cl := r.e.Cloud
	for _, m := range cloudMethods {
		cl.SetErrorRate(m, 0, cloud.KindRetryable)
		cl.SetReplyLoss(m, 0)
		cl.SetHangRate(m, 0)
	}
	cl.SetLatency(0)
	cl.SetThrottle(0, 0)
	r.chk.SetStoreFailRate(0, r.cfg.Seed)
}

// machine takes node n's machine down (the agent stops, the mounts vanish,
// then the cloud terminates, replaces or deletes its instance) or boots it.
// A machine already down is not taken down again.
func (r *runner) machine(kind string, n cloud.NodeName) error {
	if kind == StartInstance {
		if !r.down[n] {
			return nil
		}
		r.noteAll("machine %s boots", n)
		delete(r.down, n)
		return PowerOn(r.e, n)
	}
	if r.down[n] {
		return nil
	}
	r.count(kind)
	r.down[n] = true
	r.noteAll("machine %s goes down (%s)", n, kind)
	if err := PowerOff(r.e, r.chk, n, kind); err != nil {
		return err
	}
	cl := r.e.Cloud
	inst, ok := cl.InstanceOf(n)
	if !ok {
		return nil
	}
	switch kind {
	case Terminate:
		return cl.Terminate(inst)
	case ReplaceInstance:
		_, err := cl.Replace(n)
		return err
	default:
		return cl.Delete(inst)
	}
}

// calm ends every fault: cloud and store knobs off, every machine up.
func (r *runner) calm() error {
	r.calmCloud()
	for _, n := range r.e.NodeNames {
		delete(r.down, n)
		if err := PowerOn(r.e, n); err != nil {
			return err
		}
	}
	return nil
}
