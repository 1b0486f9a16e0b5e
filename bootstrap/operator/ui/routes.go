package ui

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"time"

	"github.com/tether/tether/actors/events"
)

func (u *UI) routes() {
	static, _ := fs.Sub(assets, "assets") // cannot fail: the directory is embedded
	m := http.NewServeMux()
	m.HandleFunc("GET /ui/{$}", u.handleIndex)
	m.HandleFunc("POST /ui/login", u.handleLogin)
	m.HandleFunc("POST /ui/logout", u.handleLogout)
	m.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /ui/events", u.authed(u.handleEvents))
	m.HandleFunc("GET /ui/history", u.authed(u.handleHistory))
	u.mux = m
}

// handleIndex serves the page to a session, the login form to others.
func (u *UI) handleIndex(w http.ResponseWriter, r *http.Request) {
	if !u.sessions.valid(r) {
		u.serveLogin(w, http.StatusOK, "")
		return
	}
	b, _ := assets.ReadFile("assets/index.html") // embedded: cannot fail
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b)
}

func (u *UI) serveLogin(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_ = u.login.Execute(w, struct{ Error string }{msg})
}

// heartbeat keeps proxies and the browser from closing an idle stream.
const heartbeat = 15 * time.Second

// handleEvents streams the fleet: a snapshot, then what changes.
func (u *UI) handleEvents(w http.ResponseWriter, r *http.Request) {
	s, err := u.hub.attach(r.Context()) // after a whole read if the model is stale
	if err != nil {
		return // the browser left while it waited
	}
	defer u.hub.unsubscribe(s)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		var f []byte
		select {
		case <-r.Context().Done():
			return
		case <-s.gone:
			return // cut off: the browser reconnects for a new snapshot
		case <-beat.C:
			f = []byte(": beat\n\n")
		case f = <-s.ch:
		}
		if _, err := w.Write(f); err != nil {
			return
		}
		// Send what else is queued with it in one flush.
		for more := true; more; {
			select {
			case f = <-s.ch:
				if _, err := w.Write(f); err != nil {
					return
				}
			default:
				more = false
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// handleHistory answers ?kind=volume|node|workload&name=... with the
// object's events as JSON.
func (u *UI) handleHistory(w http.ResponseWriter, r *http.Request) {
	kind, name := r.URL.Query().Get("kind"), r.URL.Query().Get("name")
	switch events.Kind(kind) {
	case events.KindVolume, events.KindNode, events.KindWorkload:
	default:
		http.Error(w, "ui: kind must be volume, node or workload", http.StatusBadRequest)
		return
	}
	if name == "" {
		http.Error(w, "ui: name the object", http.StatusBadRequest)
		return
	}
	evs, err := history(r.Context(), u.src, kind, name)
	switch {
	case errors.Is(err, errUnknown):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": kind, "name": name, "events": evs})
}
