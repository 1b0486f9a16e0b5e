package chaos

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// tether chaos --ui: the page serves while the run goes, and shows the
// plan's kills as they happen; the run still holds its invariants.
func TestChaosServesPage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs seconds of chaos")
	}
	type where struct{ url, token string }
	at := make(chan where, 1)
	done := make(chan error, 1)
	var rep Report
	go func() {
		var err error
		rep, err = Run(context.Background(), Config{Seed: 3, Duration: 3 * time.Second, Volumes: 6, Nodes: 2, UI: true,
			OnUI: func(u, tokenFile string) {
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					t.Errorf("token: %v", err)
				}
				at <- where{u, strings.TrimSpace(string(b))}
			}})
		done <- err
	}()
	var w where
	select {
	case w = <-at:
	case err := <-done:
		t.Fatalf("the run ended before it served the page: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("no page within 60s")
	}
	c := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.PostForm(w.url+"login", url.Values{"token": {w.token}})
	if err != nil || res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 {
		t.Fatalf("login: %v %v", res, err)
	}
	res.Body.Close()
	req, _ := http.NewRequest(http.MethodGet, w.url+"events", nil)
	req.AddCookie(res.Cookies()[0])
	if res, err = c.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("events: %v %v", res, err)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	var event string
	seen := false
	for !seen && sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			event = name
		}
		if event == "notice" && strings.HasPrefix(line, "data: ") && strings.Contains(line, `"kind":"kill"`) {
			t.Logf("a kill on the page: %s", line)
			seen = true
		}
	}
	res.Body.Close()
	if !seen {
		t.Fatalf("the stream ended without a kill shown: %v", sc.Err())
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not end within 2 minutes")
	}
	if rep.Violations != 0 || !rep.Converged {
		t.Fatalf("%d violations, converged=%v:\n%s", rep.Violations, rep.Converged, details(rep))
	}
}
