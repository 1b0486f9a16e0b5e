package slogrus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/slogtest"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
)

// jsonLogger returns a logrus logger writing JSON lines to the returned
// buffer, at Debug level.
func jsonLogger() (*logrus.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	l := logrus.New()
	l.SetOutput(&buf)
	l.SetFormatter(&logrus.JSONFormatter{})
	l.SetLevel(logrus.DebugLevel)
	return l, &buf
}

func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestLevels(t *testing.T) {
	tests := []struct {
		slog slog.Level
		want string
	}{
		{slog.LevelDebug - 4, "debug"},
		{slog.LevelDebug, "debug"},
		{slog.LevelInfo, "info"},
		{slog.LevelInfo + 2, "info"},
		{slog.LevelWarn, "warning"},
		{slog.LevelError, "error"},
		{slog.LevelError + 8, "error"},
	}
	for _, tt := range tests {
		l, buf := jsonLogger()
		slog.New(NewSlogHandler(l)).Log(context.Background(), tt.slog, "m")
		got := lines(t, buf)
		if len(got) != 1 || got[0]["level"] != tt.want {
			t.Errorf("slog level %v logged as %v, want %q", tt.slog, got, tt.want)
		}
	}
}

func TestEnabledFollowsLogrusLevel(t *testing.T) {
	l, buf := jsonLogger()
	l.SetLevel(logrus.WarnLevel)
	h := NewSlogHandler(l)
	ctx := context.Background()
	for level, want := range map[slog.Level]bool{
		slog.LevelDebug: false, slog.LevelInfo: false, slog.LevelWarn: true, slog.LevelError: true,
	} {
		if got := h.Enabled(ctx, level); got != want {
			t.Errorf("Enabled(%v) = %v, want %v", level, got, want)
		}
	}
	logger := slog.New(h)
	logger.Info("dropped")
	logger.Warn("kept")
	if got := lines(t, buf); len(got) != 1 || got[0]["msg"] != "kept" {
		t.Fatalf("logged %v, want only the warning", got)
	}
}

func TestAttrsAndGroups(t *testing.T) {
	l, buf := jsonLogger()
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	logger := slog.New(NewSlogHandler(l)).With("system", "s1").WithGroup("actor").With("pid", "p1")
	r := slog.NewRecord(at, slog.LevelInfo, "started", 0)
	r.AddAttrs(
		slog.Int("n", 3),
		slog.Group("req", slog.String("id", "r1"), slog.Group("inner", slog.Bool("ok", true))),
		slog.Group("", slog.String("inlined", "yes")),
		slog.Group("empty"),
		slog.Attr{},
		slog.Any("err", errors.New("cloud: throttled")),
		slog.Duration("took", 1500*time.Millisecond),
	)
	if err := logger.Handler().Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	got := lines(t, buf)
	if len(got) != 1 {
		t.Fatalf("got %d lines", len(got))
	}
	want := map[string]any{
		"level":              "info",
		"msg":                "started",
		"time":               at.Local().Format(time.RFC3339),
		"system":             "s1",
		"actor.pid":          "p1",
		"actor.n":            float64(3),
		"actor.req.id":       "r1",
		"actor.req.inner.ok": true,
		"actor.inlined":      "yes",
		"actor.err":          "cloud: throttled",
		"actor.took":         float64(1500 * time.Millisecond),
	}
	if len(got[0]) != len(want) {
		t.Errorf("fields %v, want %v", got[0], want)
	}
	for k, v := range want {
		if got[0][k] != v {
			t.Errorf("field %q = %#v, want %#v", k, got[0][k], v)
		}
	}
}

func TestDerivedHandlersDoNotShareFields(t *testing.T) {
	l, buf := jsonLogger()
	base := slog.New(NewSlogHandler(l)).With("a", 1)
	left := base.With("side", "left")
	right := base.WithGroup("g").With("side", "right")
	base.Info("base")
	left.Info("left")
	right.Info("right")
	got := lines(t, buf)
	if len(got) != 3 {
		t.Fatalf("got %d lines", len(got))
	}
	if _, ok := got[0]["side"]; ok {
		t.Errorf("base logger gained a field from a derived one: %v", got[0])
	}
	if got[1]["side"] != "left" || got[1]["a"] != float64(1) {
		t.Errorf("left: %v", got[1])
	}
	if got[2]["g.side"] != "right" || got[2]["a"] != float64(1) {
		t.Errorf("right: %v", got[2])
	}
}

// capture is a logrus formatter that keeps each entry as slogtest expects
// it: standard keys plus nested maps for dotted field keys.
type capture struct {
	mu      sync.Mutex
	entries []map[string]any
}

func (c *capture) Format(e *logrus.Entry) ([]byte, error) {
	m := map[string]any{
		slog.TimeKey:    e.Time,
		slog.LevelKey:   e.Level.String(),
		slog.MessageKey: e.Message,
	}
	for k, v := range e.Data {
		parts := strings.Split(k, ".")
		node := m
		for _, p := range parts[:len(parts)-1] {
			next, ok := node[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				node[p] = next
			}
			node = next
		}
		node[parts[len(parts)-1]] = v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = append(c.entries, m)
	return nil, nil
}

func TestSlogConformance(t *testing.T) {
	c := &capture{}
	l := logrus.New()
	l.SetFormatter(c)
	err := slogtest.TestHandler(NewSlogHandler(l), func() []map[string]any {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.entries
	})
	if err == nil {
		return
	}
	// logrus stamps every entry with time.Now when it has no time, so a
	// zero Record.Time cannot be left out: the one known deviation.
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		if !strings.Contains(e.Error(), "zero Record.Time") {
			t.Error(e)
		}
	}
}

func TestLoggerFactory(t *testing.T) {
	l, buf := jsonLogger()
	system := actor.NewActorSystem(actor.WithLoggerFactory(LoggerFactory(l)))
	t.Cleanup(system.Shutdown)
	system.Logger().Warn("hello from proto.actor", slog.String("k", "v"))
	var found bool
	for _, line := range lines(t, buf) {
		if line["msg"] != "hello from proto.actor" {
			continue
		}
		found = true
		if line["lib"] != "Proto.Actor" || line["system"] != system.ID || line["k"] != "v" || line["level"] != "warning" {
			t.Errorf("line %v lacks lib, system, k or level", line)
		}
	}
	if !found {
		t.Fatalf("message not forwarded; log: %s", buf)
	}
}

func TestDiscardLoggerFactory(t *testing.T) {
	logger := DiscardLoggerFactory()(nil)
	if logger.Enabled(context.Background(), slog.LevelError) {
		t.Fatal("discard logger enabled at Error")
	}
	logger.Error("nothing", "k", "v") // must not panic
}
