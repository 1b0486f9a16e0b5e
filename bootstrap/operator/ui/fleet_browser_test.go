package ui_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/metrics"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/mount"
)

// startTether starts a durable embedded tether of n nodes (symlink
// mounts under a temporary directory) with its metrics listener and the
// page on it, as tether up wires them; everything stops at Cleanup.
func startTether(t *testing.T, n int) (e *process.Embedded, url, token string) {
	t.Helper()
	m, err := metrics.New()
	if err != nil {
		t.Fatal(err)
	}
	cfg := process.DefaultConfig()
	cfg.DataDir, cfg.Durable, cfg.Nodes, cfg.Metrics = t.TempDir(), true, n, m
	cfg.LogOutput, cfg.LogLevel = io.Discard, "warn"
	cfg.Controller.SyncPeriod = 200 * time.Millisecond
	cfg.NewMounter = mount.NewSymlink
	if e, err = process.StartEmbedded(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping tether: %v", err)
		}
	})
	if token, err = api.LoadOrCreateToken(cfg.DataDir); err != nil {
		t.Fatal(err)
	}
	msrv, err := metrics.Serve("127.0.0.1:0", m, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = msrv.Close(context.Background()) })
	page, url, err := process.ServeUI(msrv, token, e, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(page.Close) // before tether stops (cleanups run last first)
	return e, url, token
}

func tileOf(node string) string { return fmt.Sprintf(`#nodes .tile[data-node=%q]`, node) }

func dotOf(node, vol, state string) string {
	return fmt.Sprintf(`%s .dot[data-vol=%q][data-state=%q]`, tileOf(node), vol, state)
}

// The page, in a real browser: the login form takes the token, every
// node shows, a volume applied shows up mounted and its events arrive in
// the live feed, a terminated node turns lost and comes back healthy, all
// without a reload; a screenshot is kept.
func TestBrowserFleetLive(t *testing.T) {
	const nodes = 4
	ctx := browser(t, 4*time.Minute) // first: without chromium, nothing else starts
	e, url, token := startTether(t, nodes)

	// A wrong token is refused with a message, and no session.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"),
		chromedp.Click(chromedp.CSS("#login-button")),
		chromedp.WaitVisible(chromedp.CSS("#login-error")),
	); err != nil {
		t.Fatalf("a wrong token: %v", err)
	}
	start := time.Now()
	login(t, ctx, url, token)
	for _, n := range e.NodeNames {
		wait(t, ctx, "node "+string(n)+" ready", tileOf(string(n))+".node-ready")
	}
	t.Logf("logged in and every node shown in %v", time.Since(start).Round(time.Millisecond))
	count, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#nodes .tile").length`))
	if err != nil || count != nodes {
		t.Fatalf("%d tiles (err %v), want %d", count, err, nodes)
	}
	// Marks this document: a reload would lose it.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameDocument = true`)); err != nil {
		t.Fatal(err)
	}

	if err := e.Cloud.CreateVolumeChecked("data-1", cloud.Exclusive); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Ctl().ApplyAll([]controller.Change{
		{Volume: &store.VolumeSpec{ID: "data-1", Mode: cloud.Exclusive}},
		{Workload: &store.Workload{UID: "app-1", Node: "n1", Volumes: []cloud.VolumeID{"data-1"}}},
	}); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "SuccessfulAttachVolume in the live feed", `#feed li[data-type="SuccessfulAttachVolume"]`)
	wait(t, ctx, "data-1 mounted on n1", dotOf("n1", "data-1", "mounted"))

	inst, ok := e.Account.InstanceOf("n1")
	if !ok {
		t.Fatal("n1 has no instance")
	}
	if err := e.Account.Terminate(inst); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "n1 lost after its instance was terminated", tileOf("n1")+".node-lost")
	wait(t, ctx, "data-1 no longer shown mounted on n1 (the cloud detached it)",
		tileOf("n1")+` .dot[data-vol="data-1"]:not([data-state="mounted"])`)
	screenshot(t, ctx, "ui-fleet-node-lost.png")
	if err := e.Account.Start(inst); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "n1 ready again", tileOf("n1")+".node-ready")
	wait(t, ctx, "the loss in the live feed", `#feed li[data-type="AttachmentLost"]`)
	wait(t, ctx, "data-1 mounted on n1 again (healed)", dotOf("n1", "data-1", "mounted"))

	// A second workload wants the exclusive data-1 on n2: refused there
	// (Multi-Attach) while n1 has it.
	if _, err := e.Ctl().ApplyAll([]controller.Change{
		{Workload: &store.Workload{UID: "app-2", Node: "n2", Volumes: []cloud.VolumeID{"data-1"}}},
	}); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "data-1 refused on n2 (Multi-Attach)", dotOf("n2", "data-1", "refused"))

	// History: the volume's events, from the store, in the side panel.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(dotOf("n1", "data-1", "mounted")))); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "data-1's history", `#history li[data-type="SuccessfulAttachVolume"]`)
	if same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameDocument === true`)); err != nil || !same {
		t.Fatalf("the page was reloaded (err %v)", err)
	}
	screenshot(t, ctx, "ui-fleet.png")
}
