package distributed_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/process/distributed"
)

// A controller member (tether controller with --metrics-addr and
// --token) serves the page on its metrics listener: it logs in with the
// API's token and shows every node of the cluster, ready.
func TestMemberServesPage(t *testing.T) {
	r := startRigWith(t, 1, 2, func(fc *distributed.FleetConfig) { fc.MemberDebug = true })
	_, maddr, _, ok := r.f.ControllerDebug(0)
	if !ok || maddr == "" {
		t.Fatal("member 0 has no metrics address")
	}
	page := "http://" + maddr + "/ui/"
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.PostForm(page+"login", url.Values{"token": {"fleet-test-token"}})
	if err != nil || res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 {
		t.Fatalf("login at %s: %v %v", page, res, err)
	}
	res.Body.Close()
	session := res.Cookies()[0]
	// The first frame is the fleet as the member reads it: poll until both
	// nodes are there and ready (the agents register as they start).
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if last = firstFrame(t, c, page, session); strings.Contains(last, `"n":"n1","s":"ready"`) && strings.Contains(last, `"n":"n2","s":"ready"`) {
			return
		}
	}
	t.Fatalf("the page never showed n1 and n2 ready; last snapshot: %.500s", last)
}

// firstFrame is the data of the page's first frame (its snapshot).
func firstFrame(t *testing.T, c *http.Client, page string, session *http.Cookie) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, page+"events", nil)
	req.AddCookie(session)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("events: %s", res.Status)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return data
		}
	}
	return ""
}
