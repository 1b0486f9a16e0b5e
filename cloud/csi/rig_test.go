package csi

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Node IDs of the fake's nodes, and the tether nodes that report them.
const (
	id1, id2 = cloud.InstanceID("node-1"), cloud.InstanceID("node-2")
)

// rig is a fake driver served on a unix socket (controller only) and a
// Provider dialled to it with nodes n1 -> node-1 and n2 -> node-2; all
// stop in t.Cleanup.
type rig struct {
	d *csitest.Driver
	p *Provider
	c *counter
}

// counter counts the driver's calls by method.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[method]++
}

func (c *counter) get(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[method]
}

// listByPage is a driver that verifies through ListVolumes and pages by
// two.
func listByPage() csitest.Config {
	return csitest.Config{List: true, ListPublished: true, PageSize: 2}
}

// newRig serves a driver of cfg (whose Nodes default to node-1 and node-2,
// unlimited, and whose Before is wrapped to count calls) and dials it.
func newRig(t *testing.T, cfg csitest.Config, opts ...Option) *rig {
	t.Helper()
	if cfg.Nodes == nil {
		cfg.Nodes = map[string]int64{string(id1): 0, string(id2): 0}
	}
	c := &counter{n: map[string]int{}}
	before := cfg.Before
	cfg.Before = func(ctx context.Context, method string) error {
		c.add(method)
		if before != nil {
			return before(ctx, method)
		}
		return nil
	}
	d := csitest.New(cfg)
	socket := d.Serve(t, "")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	opts = append([]Option{WithNodeIDs(map[cloud.NodeName]cloud.InstanceID{"n1": id1, "n2": id2})}, opts...)
	p, err := Dial(ctx, socket, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return &rig{d: d, p: p, c: c}
}
