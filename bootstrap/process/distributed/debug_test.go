package distributed

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// The profiling endpoint: a CPU profile between start and stop, one at a
// time, parsed as go tool pprof reads it; loopback only.
func TestPprofServer(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0"} {
		if s, err := servePprof(addr); err == nil {
			_ = s.close(context.Background())
			t.Errorf("servePprof(%q) served beyond loopback", addr)
		}
	}
	s, err := servePprof("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.close(context.Background()) })
	url := "http://" + s.ln.Addr().String() + "/debug/cpuprofile/"
	post := func(what string) (int, []byte) {
		t.Helper()
		resp, err := http.Post(url+what, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}
	if code, _ := post("stop"); code != http.StatusConflict {
		t.Errorf("stop with no profile running: %d, want 409", code)
	}
	if code, b := post("start"); code != http.StatusNoContent {
		t.Fatalf("start: %d %s", code, b)
	}
	if code, _ := post("start"); code != http.StatusConflict {
		t.Errorf("a second start: %d, want 409", code)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); { // some CPU for the profile
	}
	code, b := post("stop")
	if code != http.StatusOK {
		t.Fatalf("stop: %d %s", code, b)
	}
	// pprof's format: a gzipped protobuf whose string table names the
	// CPU sample types.
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the profile is not gzipped (%d bytes): %v", len(b), err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("cpu")) || !bytes.Contains(raw, []byte("nanoseconds")) {
		t.Errorf("not a CPU profile (%d bytes unzipped)", len(raw))
	}
	if code, _ := post("stop"); code != http.StatusConflict {
		t.Errorf("stop after stop: %d, want 409", code)
	}
}
