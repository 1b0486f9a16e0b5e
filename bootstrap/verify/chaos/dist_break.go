package chaos

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// sabotage breaks rule inv (DistributedBreaks) behind tether's back,
// through the permissive cloud, on a volume it has just attached and
// mounted: the checker must catch it, across processes, from the
// recorded timeline alone.
func (r *distRunner) sabotage(inv string) error {
	v, ok := r.freeVolume()
	if !ok {
		return fmt.Errorf("chaos: break %s: every exclusive volume is in use", inv)
	}
	on, other := r.nodes[0], r.nodes[1%len(r.nodes)]
	w := store.Workload{UID: "wbreak", Node: on, Volumes: []cloud.VolumeID{v}}
	if err := until(60*time.Second, "chaos: break", func() error { return r.apply(10*time.Second, workloadDoc(w)) }); err != nil {
		return err
	}
	r.wls[w.UID], r.created[w.UID], r.owner[v] = w, true, w.UID
	published := found{what: "publish " + w.UID + "/" + string(v), vol: v}
	if err := until(60*time.Second, "chaos: break: waiting for the volume to be mounted", func() error {
		d := r.diff()
		for _, x := range d {
			if x.Volume == v {
				return fmt.Errorf("%s", x.Detail)
			}
		}
		got, err := r.diskMounts(on)
		if err == nil && !slices.Contains(got, published) {
			err = fmt.Errorf("%s not on %s", published.what, on)
		}
		return err
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch inv {
	case "I1":
		inst, ok := r.cloud.InstanceOf(other)
		if !ok {
			return fmt.Errorf("chaos: break I1: no instance for %s", other)
		}
		r.tl.add(record{kind: recNote, vol: v, text: fmt.Sprintf("sabotage: attached to %s behind tether's back", other)})
		_, err := r.cloud.Attach(ctx, v, inst)
		return err
	default:
		inst, ok := r.cloud.InstanceOf(on)
		if !ok {
			return fmt.Errorf("chaos: break I2: no instance for %s", on)
		}
		r.tl.add(record{kind: recNote, vol: v, text: fmt.Sprintf("sabotage: detached from %s behind tether's back", on)})
		return r.cloud.Detach(ctx, v, inst)
	}
}

// freeVolume is an exclusive volume no workload uses.
func (r *distRunner) freeVolume() (cloud.VolumeID, bool) {
	for i := 0; i < r.cfg.Volumes; i++ {
		if v := volName(i); volMode(i) == cloud.Exclusive && r.owner[v] == "" {
			return v, true
		}
	}
	return "", false
}
