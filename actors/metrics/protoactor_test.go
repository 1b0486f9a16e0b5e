package metrics

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Proto.Actor's own metrics land in the same registry once the provider is
// configured on the actor system and installed globally. This test sets
// OpenTelemetry's global provider; no other test in the package depends on
// it.
func TestProtoActorMetricsShareTheRegistry(t *testing.T) {
	m := newMetrics(t)
	m.SetGlobal()

	discard := func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }
	system := actor.NewActorSystemWithConfig(actor.Configure(
		actor.WithMetricProviders(m.MeterProvider()),
		actor.WithLoggerFactory(discard),
	))
	defer system.Shutdown()

	pid := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(string); ok {
			ctx.Respond("pong")
		}
	}))
	if _, err := system.Root.RequestFuture(pid, "ping", 10*time.Second).Result(); err != nil {
		t.Fatalf("ping: %v", err)
	}

	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var names []string
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "protoactor_") {
			names = append(names, f.GetName())
		}
	}
	if len(names) == 0 {
		t.Fatalf("no protoactor_ metrics in the registry")
	}
	t.Logf("Proto.Actor metrics: %v", names)
}
