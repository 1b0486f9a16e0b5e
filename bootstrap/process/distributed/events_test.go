package distributed_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/messages"
)

// memberEvents lists events through member i's API ("" and nil: not now).
func (r *rig) memberEvents(i int, req *messages.ListEventsRequest) ([]*messages.EventInfo, error) {
	c, ctx, closeConn, err := r.f.MemberAPI(context.Background(), i)
	if err != nil {
		return nil, err
	}
	defer func() { _ = closeConn() }()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := c.ListEvents(ctx, req)
	if err != nil {
		return nil, err
	}
	return res.Events, nil
}

func hasEvent(evs []*messages.EventInfo, kind, name, typ string) bool {
	for _, e := range evs {
		if e.Kind == kind && e.Name == name && e.Type == typ {
			return true
		}
	}
	return false
}

// Events are cluster-wide: every member lists and describes the events
// recorded by the member that runs a volume's actor and by the node
// agents (their own processes), and a watch on one member delivers what
// the others record.
func TestEventsServedByEveryMember(t *testing.T) {
	r := startRig(t, 2, 1)
	r.apply(nodeDoc("n1"), volumeDoc("v-1"), workloadDoc("w-1", "n1"))
	for i := range 2 {
		r.eventually(fmt.Sprintf("member %d lists the attach (a member's) and the mount (the agent's)", i), 60*time.Second, func() bool {
			evs, err := r.memberEvents(i, &messages.ListEventsRequest{})
			return err == nil && hasEvent(evs, "volume", "v-1", "SuccessfulAttachVolume") &&
				hasEvent(evs, "workload", "w-1", "SuccessfulMountVolume")
		})
		c, ctx, closeConn, err := r.f.MemberAPI(context.Background(), i)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Describe(ctx, &messages.DescribeRequest{Kind: "volume", Name: "v-1"})
		_ = closeConn()
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, e := range res.Events {
			types = append(types, e.Type)
		}
		if !strings.Contains(strings.Join(types, ","), "SuccessfulAttachVolume") {
			t.Errorf("describe volume v-1 on member %d: events %v, want SuccessfulAttachVolume", i, types)
		}
	}

	// A watch on member 1 sees a new volume attached, whichever member
	// runs its actor, and the new workload mounted by the agent.
	c, ctx, closeConn, err := r.f.MemberAPI(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeConn() }()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	stream, err := c.WatchEvents(ctx, &messages.ListEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	r.apply(volumeDoc("v-2"), workloadDoc("w-2", "n1"))
	var attached, mounted bool
	for !(attached && mounted) {
		e, err := stream.Recv()
		if err == io.EOF || err != nil {
			t.Fatalf("watch on member 1 ended before v-2 attached (%v) and w-2 mounted (%v): %v", attached, mounted, err)
		}
		attached = attached || (e.Kind == "volume" && e.Name == "v-2" && e.Type == "SuccessfulAttachVolume")
		mounted = mounted || (e.Kind == "workload" && e.Name == "w-2" && e.Type == "SuccessfulMountVolume")
	}
}
