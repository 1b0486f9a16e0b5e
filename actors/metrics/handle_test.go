package metrics

import (
	"crypto/tls"
	"io"
	"net/http"
	"testing"
)

// Handle adds a handler beside /metrics while serving; Private says
// whether a secret may cross the listener: loopback or TLS yes, a plain
// listener on every interface no.
func TestHandleAndPrivate(t *testing.T) {
	s, err := Serve("127.0.0.1:0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeServer(t, s)
	s.Handle("/extra/", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "extra") }))
	if code, body := get(t, newClient(t), "http://"+s.Addr()+"/extra/x"); code != http.StatusOK || body != "extra" {
		t.Fatalf("GET /extra/x: %d %q", code, body)
	}
	if !s.Private() || s.TLS() {
		t.Errorf("loopback plain text: Private %v TLS %v, want true false", s.Private(), s.TLS())
	}

	all, err := ServeExposed(":0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeServer(t, all)
	if all.Private() {
		t.Error("plain text on every interface: Private, want not")
	}

	cert, _ := selfSigned(t)
	ts, err := ServeTLS(":0", nil, nil, &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeServer(t, ts)
	if !ts.Private() || !ts.TLS() {
		t.Errorf("TLS on every interface: Private %v TLS %v, want true true", ts.Private(), ts.TLS())
	}
}
