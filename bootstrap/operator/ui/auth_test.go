package ui

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/actors/metrics"
)

func withCookie(id string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/ui/events", nil)
	r.AddCookie(&http.Cookie{Name: cookieName, Value: id})
	return r
}

// A session lives sessionTTL by the injected clock; a wrong token gets
// none; the table is bounded, the oldest forgotten first.
func TestSessions(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newSessions("secret-token", func() time.Time { return now })
	if _, ok := s.login("secret-tokeN"); ok {
		t.Fatal("a wrong token logged in")
	}
	id, ok := s.login("secret-token")
	if !ok || id == "" || strings.Contains(id, "secret") {
		t.Fatalf("login: %q %v", id, ok)
	}
	if !s.valid(withCookie(id)) || s.valid(withCookie("forged")) || s.valid(httptest.NewRequest(http.MethodGet, "/", nil)) {
		t.Fatal("valid: want only the session handed out")
	}
	now = now.Add(sessionTTL)
	if s.valid(withCookie(id)) {
		t.Fatal("a session outlived sessionTTL")
	}
	first, _ := s.login("secret-token")
	for range maxSessions {
		now = now.Add(time.Second)
		s.login("secret-token")
	}
	if s.valid(withCookie(first)) || len(s.byID) != maxSessions {
		t.Fatalf("%d sessions kept (the oldest valid: %v), want %d without it", len(s.byID), s.valid(withCookie(first)), maxSessions)
	}
	if _, ok := newSessions("", time.Now).login(""); ok {
		t.Fatal("an empty token logged in")
	}
}

// The page is never served where the token would cross the network in
// plain text; it needs a token to start with.
func TestMountRefusesPlainRemote(t *testing.T) {
	if _, err := Start(newFake(), Options{}); err == nil {
		t.Fatal("Start without a token: no error")
	}
	u := startFake(t, newFake())
	srv, err := metrics.ServeExposed(":0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(t.Context())
	if err := u.Mount(srv); !errors.Is(err, ErrNotPrivate) {
		t.Fatalf("Mount on plain text beyond loopback: %v, want ErrNotPrivate", err)
	}
}

// Bad history requests get a clear 400; a session is needed.
func TestHistoryRequests(t *testing.T) {
	u := startFake(t, newFake())
	id, _ := u.sessions.login(u.opt.Token)
	for _, tt := range []struct {
		query string
		code  int
		body  string
	}{
		{"kind=widget&name=x", http.StatusBadRequest, "kind must be volume, node or workload"},
		{"kind=volume", http.StatusBadRequest, "name the object"},
		{"kind=volume&name=v1", http.StatusOK, `"type":"Seen"`},
	} {
		r := withCookie(id)
		r.URL.Path, r.URL.RawQuery = "/ui/history", tt.query
		w := httptest.NewRecorder()
		u.ServeHTTP(w, r)
		if w.Code != tt.code || !strings.Contains(w.Body.String(), tt.body) {
			t.Errorf("?%s: %d %q, want %d with %q", tt.query, w.Code, w.Body.String(), tt.code, tt.body)
		}
	}
	w := httptest.NewRecorder()
	u.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/ui/history?kind=volume&name=v1", nil))
	if w.Code != http.StatusUnauthorized {
		t.Errorf("history without a session: %d, want 401", w.Code)
	}
}
