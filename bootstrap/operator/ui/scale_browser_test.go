package ui_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/metrics"
	"github.com/tether/tether/bootstrap/operator/ui"
)

// bigFleet is a test-only fleet served as the page's Source: nodes
// node-00000..., each with perNode volumes, in every state the page
// draws; one volume's state can be changed and announced by an event.
type bigFleet struct {
	nodes, perNode int
	mu             sync.Mutex
	changed        map[string]map[string]string
	evs            chan events.Event
}

var volStates = []string{ui.VolMounted, ui.VolMounted, ui.VolMounted, ui.VolAttached, ui.VolAttaching,
	ui.VolPending, ui.VolUncertain, ui.VolDetaching, ui.VolMounted, ui.VolMounted}

func (f *bigFleet) nodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

func (f *bigFleet) Nodes(context.Context) ([]ui.NodeView, error) {
	out := make([]ui.NodeView, f.nodes)
	for i := range out {
		st := ui.NodeReady
		switch i % 500 {
		case 7:
			st = ui.NodeLost
		case 11:
			st = ui.NodeNotReady
		}
		out[i] = ui.NodeView{Name: f.nodeName(i), State: st}
	}
	return out, nil
}

func (f *bigFleet) Node(_ context.Context, name string) (ui.NodeView, bool, error) {
	return ui.NodeView{Name: name, State: ui.NodeReady}, true, nil
}

func (f *bigFleet) volume(i int) ui.VolumeView {
	id := fmt.Sprintf("vol-%06d", i)
	f.mu.Lock()
	defer f.mu.Unlock()
	if on, ok := f.changed[id]; ok {
		return ui.VolumeView{ID: id, On: on}
	}
	return ui.VolumeView{ID: id, On: map[string]string{f.nodeName(i / f.perNode): volStates[i%len(volStates)]}}
}

func (f *bigFleet) Volumes(context.Context) ([]ui.VolumeView, error) {
	out := make([]ui.VolumeView, f.nodes*f.perNode)
	for i := range out {
		out[i] = f.volume(i)
	}
	return out, nil
}

func (f *bigFleet) Volume(_ context.Context, id string) (ui.VolumeView, bool, error) {
	var i int
	if _, err := fmt.Sscanf(id, "vol-%06d", &i); err != nil {
		return ui.VolumeView{}, false, nil
	}
	return f.volume(i), true, nil
}

func (f *bigFleet) History(context.Context, events.Kind, string) ([]events.Event, error) {
	return nil, nil
}

func (f *bigFleet) Watch(ctx context.Context, fn func(events.Event)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-f.evs:
			fn(e)
		}
	}
}

func (f *bigFleet) Stats() ui.Stats { return ui.Stats{Calls: map[string]float64{}} }

func heapMiB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

// The page at 10,000 nodes and 100,000 volumes (a test-only fleet as the
// Source: the measure is the page's and its server's, not the
// controller's): it loads, draws one page of 500 tiles, finds a node by
// name, and shows a change without a reload. Logs the load time, the
// browser's JS heap and the server's heap for the fleet.
func TestBrowserTenThousandNodes(t *testing.T) {
	const nodes, perNode = 10000, 10
	ctx := browser(t, 4*time.Minute)
	fleet := &bigFleet{nodes: nodes, perNode: perNode, changed: map[string]map[string]string{}, evs: make(chan events.Event, 1)}
	before := heapMiB()
	page, err := ui.Start(fleet, ui.Options{Token: strings.Repeat("k", 64), NodeEvery: time.Hour, FullEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := metrics.Serve("127.0.0.1:0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	t.Cleanup(page.Close) // first: it ends the page's streams, which the server's Close waits for
	if err := page.Mount(srv); err != nil {
		t.Fatal(err)
	}
	url := ui.URL(srv)
	start := time.Now()
	login(t, ctx, url, strings.Repeat("k", 64))
	wait(t, ctx, "the first page of tiles", "#nodes .tile:nth-child(500)")
	t.Logf("first load (login, server's first read of the fleet included): %v", time.Since(start).Round(time.Millisecond))
	server := heapMiB() - before

	start = time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#status.live"))); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "500 tiles after a reload", "#nodes .tile:nth-child(500)")
	load := time.Since(start)
	if _, err := chromedp.Call(ctx, performance.Enable, performance.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	res, err := chromedp.Call(ctx, performance.GetMetrics, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, x := range res.Metrics {
		m[x.Name] = x.Value
	}
	t.Logf("at %d nodes / %d volumes: page load %v; JS heap used %.1f MiB (total %.1f MiB), DOM nodes %.0f; server heap for the fleet %.1f MiB",
		nodes, nodes*perNode, load.Round(time.Millisecond), m["JSHeapUsedSize"]/(1<<20), m["JSHeapTotalSize"]/(1<<20), m["Nodes"], server)
	summary, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("summary").textContent`))
	if err != nil || !strings.HasPrefix(summary, fmt.Sprintf("%d nodes", nodes)) {
		t.Fatalf("summary %q (%v), want %d nodes counted", summary, err, nodes)
	}
	t.Logf("summary: %s", summary)
	screenshot(t, ctx, "ui-10000-nodes-page1.png")
	if load > 30*time.Second || m["JSHeapUsedSize"] > 512<<20 {
		t.Errorf("too slow or too big: load %v, JS heap %.0f MiB (bounds 30 s, 512 MiB)", load, m["JSHeapUsedSize"]/(1<<20))
	}

	// Find the last node by name; change one of its volumes: the tile
	// follows without a reload.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#filter"), "node-09999")); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "node-09999 found by the filter", `#nodes .tile[data-node="node-09999"]`)
	start = time.Now()
	fleet.mu.Lock()
	fleet.changed["vol-099999"] = map[string]string{"node-09999": ui.VolUncertain}
	fleet.mu.Unlock()
	fleet.evs <- events.Event{Object: events.Ref{Kind: events.KindVolume, Name: "vol-099999"}, Type: "FailedDetachVolume", Node: "node-09999", Time: time.Now()}
	wait(t, ctx, "vol-099999 uncertain on node-09999", `#nodes .tile[data-node="node-09999"] .dot[data-vol="vol-099999"][data-state="uncertain"]`)
	t.Logf("a change shown %v after its event", time.Since(start).Round(time.Millisecond))
	screenshot(t, ctx, "ui-10000-nodes.png")
}
