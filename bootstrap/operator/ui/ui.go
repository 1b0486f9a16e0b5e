// Package ui serves the operator's web page at /ui/ on the metrics
// listener: the fleet as a grid of nodes with their volumes, coloured by
// state and kept live over server-sent events, each object's history
// from the store's events, cloud calls per second and operations in
// flight, and chaos's kills and faults as they happen.
//
// It reads state, never changes it: every request it serves is a read of
// the Source (the controller's view, the event log, the metrics
// registry), and the login is the API's bearer token, asked once and
// kept as a session cookie. Its assets are embedded: no request leaves
// the machine, as its Content-Security-Policy tells the browser.
package ui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sync"
	"time"

	"github.com/tether/tether/actors/metrics"
)

//go:embed assets
var assets embed.FS

// ErrNotPrivate is returned by Mount for a listener that is neither TLS
// nor loopback: the token would cross the network in plain text.
var ErrNotPrivate = errors.New("ui: refusing to serve the page (and take the API token) in plain text beyond loopback: serve metrics over TLS")

// Options tunes the page's server. Zero values are the defaults.
type Options struct {
	// Token is the API's bearer token: the login form's answer. Required.
	Token string
	// Now is the clock (sessions, notices); time.Now by default.
	Now func() time.Time
	// Tick gathers events into one read of what they name (250 ms);
	// NodeEvery sweeps the nodes' states (2 s); FullEvery reads every
	// node and volume again (30 s); StatsEvery sends stats (1 s). A
	// sweep waits ten of its own lengths at least (sweepShare).
	Tick, NodeEvery, FullEvery, StatsEvery time.Duration
	// Logf logs what went wrong reading the source (dropped if nil).
	Logf func(format string, args ...any)
}

func (o *Options) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Tick, 250*time.Millisecond)
	def(&o.NodeEvery, 2*time.Second)
	def(&o.FullEvery, 30*time.Second)
	def(&o.StatsEvery, time.Second)
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// UI is the page's server: an http.Handler for /ui/ and the hub behind it.
type UI struct {
	src      Source
	opt      Options
	hub      *hub
	sessions *sessions
	mux      *http.ServeMux
	login    *template.Template
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
}

// Start reads src and serves until Close. A missing token is an error.
func Start(src Source, opt Options) (*UI, error) {
	if opt.Token == "" {
		return nil, errors.New("ui: no API token to log in with")
	}
	opt.defaults()
	login, err := template.ParseFS(assets, "assets/login.html")
	if err != nil {
		return nil, fmt.Errorf("ui: login page: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	u := &UI{src: src, opt: opt, hub: newHub(opt.Now), sessions: newSessions(opt.Token, opt.Now),
		login: login, cancel: cancel, done: make(chan struct{})}
	u.routes()
	go func() {
		defer close(u.done)
		u.hub.run(ctx, src, opt, opt.Logf)
	}()
	return u, nil
}

// Close stops reading the source and cuts off every browser. A nil *UI
// (a page not served) does nothing.
func (u *UI) Close() {
	if u == nil {
		return
	}
	u.stopOnce.Do(func() {
		u.cancel()
		<-u.done
		u.hub.mu.Lock()
		for s := range u.hub.subs {
			delete(u.hub.subs, s)
			close(s.gone)
		}
		u.hub.mu.Unlock()
	})
}

// Mount serves the page at /ui/ on s: refused (ErrNotPrivate) unless s
// is TLS or loopback.
func (u *UI) Mount(s *metrics.Server) error {
	if !s.Private() {
		return ErrNotPrivate
	}
	s.Handle("/ui/", u)
	s.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	return nil
}

// URL is the page's address on s.
func URL(s *metrics.Server) string {
	scheme := "http"
	if s.TLS() {
		scheme = "https"
	}
	return scheme + "://" + s.Addr() + "/ui/"
}

// Notice shows a chaos kill or fault on every page (kind: "kill",
// "fault", ...). A nil *UI does nothing.
func (u *UI) Notice(kind, text string) {
	if u != nil {
		u.hub.notice(kind, text)
	}
}

// csp lets the page load its own script and style and talk to its own
// origin, nothing else.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP implements http.Handler.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	u.mux.ServeHTTP(w, r)
}
