package ui_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/metrics"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/operator/ui"
	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/mount"
)

// A measurement, not a check: the page on a real embedded tether (memory
// mounter, as tether bench --mounter memory) of NODESxVOLUMES, one
// exclusive volume per workload, given as TETHER_UI_MEASURE=1000x10000.
// It logs how long the server's reads of the controller take, the
// server's heap for the page, and the browser's load time and JS heap.
func TestMeasureRealFleet(t *testing.T) {
	spec := os.Getenv("TETHER_UI_MEASURE")
	if spec == "" {
		t.Skip("a measurement: set TETHER_UI_MEASURE=NODESxVOLUMES (e.g. 1000x10000) to run it")
	}
	var nodes, vols int
	if _, err := fmt.Sscanf(spec, "%dx%d", &nodes, &vols); err != nil || nodes < 1 || vols < 1 {
		t.Fatalf("TETHER_UI_MEASURE=%q: want NODESxVOLUMES, e.g. 1000x10000", spec)
	}
	m, err := metrics.New()
	if err != nil {
		t.Fatal(err)
	}
	mem := mount.NewMemory()
	cfg := process.DefaultConfig()
	cfg.DataDir, cfg.Nodes, cfg.Metrics = t.TempDir(), nodes, m
	cfg.LogOutput, cfg.LogLevel = io.Discard, "error"
	cfg.NewMounter, cfg.Sim.VirtualContent = mem.Mounter, true
	e, err := process.StartEmbedded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	start := time.Now()
	for lo := 0; lo < vols; lo += 1000 {
		var changes []controller.Change
		for i := lo; i < min(lo+1000, vols); i++ {
			id := cloud.VolumeID(fmt.Sprintf("vol-%06d", i))
			e.Cloud.CreateVolume(id, cloud.Exclusive)
			changes = append(changes, controller.Change{Volume: &store.VolumeSpec{ID: id, Mode: cloud.Exclusive}},
				controller.Change{Workload: &store.Workload{UID: fmt.Sprintf("app-%06d", i), Node: e.NodeNames[i%nodes], Volumes: []cloud.VolumeID{id}}})
		}
		if _, err := e.Ctl().ApplyAll(changes); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(15 * time.Minute); mem.Mounts() < 2*vols; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("%d mounts after 15 min, want %d", mem.Mounts(), 2*vols)
		}
	}
	t.Logf("fleet of %d nodes, %d volumes mounted in %v", nodes, vols, time.Since(start).Round(time.Millisecond))

	src := &ui.Controller{Ctl: e.Ctl, Cloud: e.Account, Metrics: m}
	start = time.Now()
	if _, err := src.Nodes(context.Background()); err != nil {
		t.Fatal(err)
	}
	tNodes := time.Since(start)
	start = time.Now()
	if _, err := src.Volumes(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("server reads: every node %v, every volume %v", tNodes.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	before := heapMiB()
	token := strings.Repeat("m", 64)
	srv, err := metrics.Serve("127.0.0.1:0", m, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	page, url, err := process.ServeUI(srv, token, e, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(page.Close)
	ctx := browser(t, 10*time.Minute)
	start = time.Now()
	login(t, ctx, url, token)
	wait(t, ctx, "the first page of tiles", fmt.Sprintf("#nodes .tile:nth-child(%d)", min(nodes, 500)))
	t.Logf("first load (the server's first read included): %v; server heap for the page %.1f MiB",
		time.Since(start).Round(time.Millisecond), heapMiB()-before)
	start = time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#status.live"))); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "tiles after a reload", fmt.Sprintf("#nodes .tile:nth-child(%d)", min(nodes, 500)))
	load := time.Since(start)
	if _, err := chromedp.Call(ctx, performance.Enable, performance.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	res, err := chromedp.Call(ctx, performance.GetMetrics, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res.Metrics {
		if x.Name == "JSHeapUsedSize" {
			t.Logf("page load %v, JS heap used %.1f MiB", load.Round(time.Millisecond), x.Value/(1<<20))
		}
	}
	screenshot(t, ctx, "ui-measure.png")
}
