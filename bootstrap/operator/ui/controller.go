package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/metrics"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// Instances is the cloud as the page needs it: a node whose instance is
// not running is lost, whatever the controller has noticed yet.
type Instances interface {
	InstanceOf(node cloud.NodeName) (cloud.InstanceID, bool)
	Running(inst cloud.InstanceID) bool
}

// Controller is the Source of a running controller: nodes and volumes
// from its store and its actors, readiness from the cloud, events from
// the durable log, cloud calls and operations from the metrics registry.
type Controller struct {
	// Ctl is the controller now (a process may restart its controller).
	Ctl func() *controller.Controller
	// Cloud, if set, marks a node whose instance does not run as lost.
	Cloud Instances
	// Metrics, if set, is read for Stats.
	Metrics *metrics.Metrics
	// Subscribe, if set, is used when the controller has no durable event
	// log to watch (a process that is not durable: tether chaos).
	Subscribe func(func(events.Event))
}

// actorTimeout bounds one actor's answer.
const actorTimeout = 5 * time.Second

// page is how many objects one store read returns.
const page = 1000

// Nodes implements Source.
func (c *Controller) Nodes(ctx context.Context) ([]NodeView, error) {
	var out []NodeView
	var after cloud.NodeName
	for {
		specs, err := c.Ctl().Store().NodesAfter(after, page)
		if err != nil {
			return nil, err
		}
		for _, n := range specs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			out = append(out, c.nodeView(n.Name))
		}
		if len(specs) < page {
			return out, nil
		}
		after = specs[len(specs)-1].Name
	}
}

// Node implements Source.
func (c *Controller) Node(_ context.Context, name string) (NodeView, bool, error) {
	_, ok, err := c.Ctl().Store().Node(cloud.NodeName(name))
	if err != nil || !ok {
		return NodeView{}, false, err
	}
	return c.nodeView(cloud.NodeName(name)), true, nil
}

// nodeView is lost when the cloud says its instance does not run, else
// what the node actor says (NotReady when it does not answer).
func (c *Controller) nodeView(name cloud.NodeName) NodeView {
	v := NodeView{Name: string(name), State: NodeNotReady}
	if c.Cloud != nil {
		if inst, ok := c.Cloud.InstanceOf(name); !ok || !c.Cloud.Running(inst) {
			v.State = NodeLost
			return v
		}
	}
	if st, err := c.Ctl().NodeStatus(name, actorTimeout); err == nil && st.Ready {
		v.State = NodeReady
	}
	return v
}

// Volumes implements Source.
func (c *Controller) Volumes(ctx context.Context) ([]VolumeView, error) {
	var out []VolumeView
	var after cloud.VolumeID
	for {
		specs, err := c.Ctl().Store().VolumesAfter(after, page)
		if err != nil {
			return nil, err
		}
		for _, v := range specs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			st, err := c.Ctl().VolumeStatus(v.ID, actorTimeout)
			if err != nil {
				return nil, err
			}
			out = append(out, volumeView(st))
		}
		if len(specs) < page {
			return out, nil
		}
		after = specs[len(specs)-1].ID
	}
}

// Volume implements Source.
func (c *Controller) Volume(_ context.Context, id string) (VolumeView, bool, error) {
	if _, ok, err := c.Ctl().Store().Volume(cloud.VolumeID(id)); err != nil || !ok {
		return VolumeView{}, false, err
	}
	st, err := c.Ctl().VolumeStatus(cloud.VolumeID(id), actorTimeout)
	if err != nil {
		return VolumeView{}, false, err
	}
	return volumeView(st), true, nil
}

// volumeView turns a volume actor's status into dots: pending where it
// is wanted and nothing happens yet, the attachment's state elsewhere,
// mounted where attached and reported in use.
func volumeView(st *messages.VolumeStatus) VolumeView {
	v := VolumeView{ID: st.VolumeId, On: map[string]string{}}
	for _, n := range st.DesiredNodes {
		v.On[n] = VolPending
	}
	inUse := map[string]bool{}
	for _, n := range st.NodesInUse {
		inUse[n] = true
	}
	for _, a := range st.Attachments {
		s := strings.ToLower(a.State)
		if s == VolAttached && inUse[a.Node] {
			s = VolMounted
		}
		v.On[a.Node] = s
	}
	return v
}

// History implements Source: the events of the current incarnation.
func (c *Controller) History(ctx context.Context, kind events.Kind, name string) ([]events.Event, error) {
	uid, err := c.currentUID(kind, name)
	if err != nil {
		return nil, err
	}
	evs, _, err := c.Ctl().ListEvents(ctx, events.Query{Kind: kind, Name: name, UID: uid})
	return evs, err
}

// errUnknown is returned for an object the store does not have.
var errUnknown = errors.New("ui: no such object")

func (c *Controller) currentUID(kind events.Kind, name string) (string, error) {
	st := c.Ctl().Store()
	var uid string
	var ok bool
	var err error
	switch kind {
	case events.KindVolume:
		var v store.VolumeSpec
		v, ok, err = st.Volume(cloud.VolumeID(name))
		uid = v.ObjectUID
	case events.KindNode:
		var n store.NodeSpec
		n, ok, err = st.Node(cloud.NodeName(name))
		uid = n.ObjectUID
	case events.KindWorkload:
		var w store.Workload
		w, ok, err = st.Workload(name)
		uid = w.ObjectUID
	default:
		return "", fmt.Errorf("ui: unknown kind %q (want volume, node or workload)", kind)
	}
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s %q", errUnknown, kind, name)
	}
	return uid, err
}

// Watch implements Source: the durable log's events from now on (every
// member's and agent's), or the recorder's when there is no log.
func (c *Controller) Watch(ctx context.Context, fn func(events.Event)) error {
	// A name no object has: the answer is empty, its cursor the log's end.
	_, cursor, err := c.Ctl().ListEvents(ctx, events.Query{Kind: events.KindNode, Name: "\x00"})
	if err == nil && cursor > 0 {
		return c.Ctl().WatchEvents(ctx, events.Query{}, cursor, fn)
	}
	if c.Subscribe == nil {
		if err == nil {
			err = errors.New("ui: the controller has no durable event log to watch")
		}
		return err
	}
	ch := make(chan events.Event, 4096)
	c.Subscribe(func(e events.Event) {
		select {
		case ch <- e:
		default: // the page misses an event rather than slow the recorder
		}
	})
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-ch:
			fn(e)
		}
	}
}

// Stats implements Source: tether_cloud_calls_total summed by method,
// and attachments Attaching or Detaching (operations in flight) from
// tether_attachments.
func (c *Controller) Stats() Stats {
	s := Stats{Calls: map[string]float64{}}
	reg := c.Metrics.Registry()
	if reg == nil {
		return s
	}
	fams, _ := reg.Gather() // a failing collector leaves the others
	for _, f := range fams {
		switch f.GetName() {
		case "tether_cloud_calls_total":
			for _, m := range f.GetMetric() {
				s.Calls[label(m, "method")] += m.GetCounter().GetValue()
			}
		case "tether_attachments":
			for _, m := range f.GetMetric() {
				if st := label(m, "state"); st == "Attaching" || st == "Detaching" {
					s.InFlight += m.GetGauge().GetValue()
				}
			}
		}
	}
	return s
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
