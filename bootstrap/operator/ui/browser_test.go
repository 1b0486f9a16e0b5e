package ui_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds a headless-capable Chromium: the test skips without one,
// except under CI (env CI set), where a missing browser is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (CI is set, so this fails): apt-get install chromium, or run .ci/deps")
	}
	t.Skip("chromium is not installed: apt-get install chromium (as root) to run the browser test")
	return ""
}

// browser starts a headless Chromium for the test, stopped by Cleanup,
// and returns a tab's context bounded by timeout.
func browser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // tests may run as root, where the sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc() // waits for the browser process to exit
	})
	// Start the browser on ctx itself: started on a derived context, it
	// would close with that context.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// artifact is where a test's artifact named name is written: under
// $TETHER_ARTIFACTS if set, else the test's temporary directory.
func artifact(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("TETHER_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// screenshot writes the page as a PNG artifact and logs its path.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := artifact(t, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}

// login opens url and logs in with token through the form.
func login(t *testing.T, ctx context.Context, url, token string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	err := chromedp.Do(wctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#login-button")),
		chromedp.WaitVisible(chromedp.CSS("#status.live")),
	)
	if err != nil {
		t.Fatalf("logging in: %v; the page shows:\n%s", err, pageText(ctx))
	}
}

// waitFor bounds each wait: long enough for a sync period, a backoff
// and a loaded machine.
const waitFor = 60 * time.Second

// wait waits for selector to match, naming what it waited for; on a
// timeout it shows what the page showed.
func wait(t *testing.T, ctx context.Context, what, selector string) {
	t.Helper()
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.WaitReady(chromedp.CSS(selector))); err != nil {
		t.Fatalf("waiting for %s (%s): %v; the page shows:\n%s", what, selector, err, pageText(ctx))
	}
	t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
}

// pageText is the page's address and text, for a failure's message.
func pageText(ctx context.Context) string {
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 3000)`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}
