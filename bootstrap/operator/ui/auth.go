package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"sync"
	"time"
)

// The page asks for the API token once, in a login form (POST /ui/login),
// and keeps a session in a cookie: the token itself never appears in a URL
// or in a cookie, and a session is worthless once this process stops.

// cookieName is the session cookie's name.
const cookieName = "tether_session"

// sessionTTL bounds a session; maxSessions bounds the table (the oldest
// session is forgotten first).
const (
	sessionTTL  = 12 * time.Hour
	maxSessions = 1024
)

// sessions holds the sessions this process handed out.
type sessions struct {
	token []byte
	now   func() time.Time
	mu    sync.Mutex
	byID  map[string]time.Time // session id -> expiry
}

func newSessions(token string, now func() time.Time) *sessions {
	return &sessions{token: []byte(token), now: now, byID: map[string]time.Time{}}
}

// login checks token in constant time and returns a new session id.
func (s *sessions) login(token string) (string, bool) {
	if len(s.token) == 0 || subtle.ConstantTimeCompare([]byte(token), s.token) != 1 {
		return "", false
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // never fails (crypto/rand)
	id := hex.EncodeToString(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, exp := range s.byID {
		if !now.Before(exp) {
			delete(s.byID, k)
		}
	}
	if len(s.byID) >= maxSessions {
		s.evictOldestLocked()
	}
	s.byID[id] = now.Add(sessionTTL)
	return id, true
}

func (s *sessions) evictOldestLocked() {
	var oldest string
	var at time.Time
	for k, exp := range s.byID {
		if oldest == "" || exp.Before(at) {
			oldest, at = k, exp
		}
	}
	delete(s.byID, oldest)
}

// valid reports whether r carries a live session.
func (s *sessions) valid(r *http.Request) bool {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.byID[c.Value]
	return ok && s.now().Before(exp)
}

// logout forgets r's session.
func (s *sessions) logout(r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		s.mu.Lock()
		delete(s.byID, c.Value)
		s.mu.Unlock()
	}
}

// cookie is the session cookie for id: HttpOnly (no script reads it),
// SameSite=Strict (no other site's page sends it), Secure under TLS,
// scoped to /ui/. maxAge < 0 deletes it.
func cookie(id string, secure bool, maxAge int) *http.Cookie {
	return &http.Cookie{Name: cookieName, Value: id, Path: "/ui/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secure, MaxAge: maxAge}
}

// handleLogin takes the form's token: a session cookie and a redirect to
// the page, or 401 with the form again.
func (u *UI) handleLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "ui: bad login form: "+err.Error(), http.StatusBadRequest)
		return
	}
	id, ok := u.sessions.login(r.PostForm.Get("token"))
	if !ok {
		u.serveLogin(w, http.StatusUnauthorized, "Wrong token: it is the api-token file in tether's data directory.")
		return
	}
	http.SetCookie(w, cookie(id, r.TLS != nil, int(sessionTTL/time.Second)))
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// handleLogout ends the session.
func (u *UI) handleLogout(w http.ResponseWriter, r *http.Request) {
	u.sessions.logout(r)
	http.SetCookie(w, cookie("", r.TLS != nil, -1))
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// authed serves h to a live session only: others get 401 (the page's
// script then shows the login form).
func (u *UI) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !u.sessions.valid(r) {
			http.Error(w, "ui: log in first", http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}
