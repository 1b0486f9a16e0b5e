package process

import (
	"bufio"
	"context"
	"crypto/tls"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/bootstrap/operator/certs"
)

// uiURL finds the page's address on tether up's UI line.
func uiURL(t *testing.T, out string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "UI" {
			return f[1]
		}
	}
	t.Fatalf("tether up printed no UI line:\n%s", out)
	return ""
}

// noRedirects is a client that shows redirects instead of following them.
func noRedirects(tr *http.Transport) *http.Client {
	return &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// checkLogin walks the page's login as a browser would, and checks the
// API's token rules: the form only by POST, a wrong token refused, the
// session in a cookie scripts and other sites cannot use (Secure under
// TLS), never the token itself; the stream only with the session.
func checkLogin(t *testing.T, c *http.Client, page, token string, secure bool) {
	t.Helper()
	res, err := c.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("GET %s: %d, CSP %q", page, res.StatusCode, res.Header.Get("Content-Security-Policy"))
	}
	if res, err = c.Get(page + "events"); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the stream without a session: %v %v, want 401", res.Status, err)
	}
	res.Body.Close()
	if res, err = c.Get(page + "login?token=" + url.QueryEscape(token)); err != nil || res.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("the token in a URL: %v %v, want 405", res.Status, err)
	}
	res.Body.Close()
	if res, err = c.PostForm(page+"login", url.Values{"token": {"wrong"}}); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %v %v, want 401", res.Status, err)
	}
	res.Body.Close()
	if res, err = c.PostForm(page+"login", url.Values{"token": {token}}); err != nil || res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the token: %v %v, want 303", res.Status, err)
	}
	res.Body.Close()
	cookies := res.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login set %d cookies, want 1", len(cookies))
	}
	ck := cookies[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure != secure || ck.Path != "/ui/" || strings.Contains(ck.Value, token) {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Secure=%v, Path /ui/, not the token", ck, secure)
	}
	req, _ := http.NewRequest(http.MethodGet, page+"events", nil)
	req.AddCookie(ck)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res, err = c.Do(req.WithContext(ctx)); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the stream with the session: %v %v", res, err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			if !strings.Contains(line, `"n":"n1"`) {
				t.Errorf("the first frame does not show node n1: %.300s", line)
			}
			return
		}
	}
	t.Fatalf("the stream ended without a frame: %v", sc.Err())
}

// tether up serves the page on the metrics listener and prints it on a
// UI line; in plain text on loopback, and over TLS with a Secure cookie.
func TestUpServesUI(t *testing.T) {
	dir := t.TempDir()
	out := runUp(t, upConfig(dir))
	page := uiURL(t, out.String())
	if !strings.HasPrefix(page, "http://127.0.0.1:") || !strings.HasSuffix(page, "/ui/") {
		t.Fatalf("UI %s, want http://127.0.0.1:PORT/ui/", page)
	}
	token, err := api.LoadOrCreateToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	checkLogin(t, noRedirects(tr), page, token, false)
}

func TestUpServesUIOverTLS(t *testing.T) {
	dir, certDir := t.TempDir(), t.TempDir()
	if _, err := certs.WriteSet(certDir, certs.SetOptions{Hosts: []string{"localhost"}, ValidFor: time.Hour, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	p := func(n string) string { return filepath.Join(certDir, n) }
	cfg := upConfig(dir)
	cfg.MetricsTLS = TLSFiles{Cert: p(certs.ServerFile), Key: p(certs.ServerKeyFile)}
	page := uiURL(t, runUp(t, cfg).String())
	if !strings.HasPrefix(page, "https://") {
		t.Fatalf("UI %s, want https://", page)
	}
	token, err := os.ReadFile(filepath.Join(dir, api.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	ca, _, err := certs.LoadPool(p(certs.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: ca, ServerName: "localhost"}}
	t.Cleanup(tr.CloseIdleConnections)
	checkLogin(t, noRedirects(tr), page, strings.TrimSpace(string(token)), true)
}
