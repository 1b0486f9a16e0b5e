package chaos

import (
	"fmt"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/faulty"
)

// cloudMethods are the provider calls cloud faults apply to.
var cloudMethods = []faulty.Method{faulty.MethodAttach, faulty.MethodDetach, faulty.MethodInstanceVolumes, faulty.MethodVolumesAreAttached}

// knobs make the cloud fail: cloud/faulty's (cloudKnobs: the sim's own,
// or a faulty.Provider in front of the loop cloud) or the CSI driver's
// hooks (csiFaults). Each setting lasts until the next one; zero turns it
// off.
type knobs interface {
	SetErrorRate(p float64)
	SetLatency(d time.Duration)
	SetThrottle(rate float64, burst int)
	SetReplyLoss(p float64)
	SetHangRate(p float64)
}

// cloudKnobs are a cloud's faulty.Faults, set for cloudMethods (errors
// retryable; hangs: attaches and detaches only); latency and throttling
// apply to every call.
type cloudKnobs struct{ *faulty.Faults }

func (k cloudKnobs) SetErrorRate(p float64) {
	for _, m := range cloudMethods {
		k.Faults.SetErrorRate(m, p, cloud.KindRetryable)
	}
}

func (k cloudKnobs) SetReplyLoss(p float64) {
	for _, m := range cloudMethods {
		k.Faults.SetReplyLoss(m, p)
	}
}

func (k cloudKnobs) SetHangRate(p float64) {
	for _, m := range []faulty.Method{faulty.MethodAttach, faulty.MethodDetach} {
		k.Faults.SetHangRate(m, p)
	}
}

// fault turns on a cloud or store fault (until the next CalmCloud),
// detaches a volume from the cloud's side, or restarts a CSI driver's
// plugins (until the next DriverBack).
func (r *runner) fault(a Action) error {
	switch a.Kind {
	case RestartDriver:
		r.restartDriver(a)
		return nil
	case DriverBack:
		return r.driverBack()
	}
	k := r.knobs
	if a.Kind != CalmCloud {
		r.count(a.Kind)
	}
	switch a.Kind {
	case CloudErrors:
		k.SetErrorRate(0.3)
	case LatencySpike:
		k.SetLatency(30 * time.Millisecond)
	case Throttle:
		k.SetThrottle(30, 5)
	case ReplyLoss:
		k.SetReplyLoss(0.2)
	case HangCalls:
		k.SetHangRate(0.2)
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
	on := r.acct.Attachments()[vol]
	if len(on) == 0 {
		return nil
	}
	r.chk.Note(vol, "console detach from %s", on[0])
	return r.acct.ConsoleDetach(vol, on[0])
}

func (r *runner) calmCloud() {
	k := r.knobs
	k.SetErrorRate(0)
	k.SetReplyLoss(0)
	k.SetHangRate(0)
	k.SetLatency(0)
	k.SetThrottle(0, 0)
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
	a := r.acct
	inst, ok := a.InstanceOf(n)
	if !ok {
		return nil
	}
	switch kind {
	case Terminate:
		return a.Terminate(inst)
	case ReplaceInstance:
		_, err := a.Replace(n)
		return err
	default:
		return a.Delete(inst)
	}
}

// calm ends every fault: cloud and store knobs off, every machine up,
// every plugin of a CSI driver serving.
func (r *runner) calm() error {
	r.calmCloud()
	if r.csi != nil {
		if err := r.driverBack(); err != nil {
			return err
		}
	}
	for _, n := range r.e.NodeNames {
		delete(r.down, n)
		if err := PowerOn(r.e, n); err != nil {
			return err
		}
	}
	return nil
}
