package chaos

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tether/tether/actors/metrics"
	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/bootstrap/operator/ui"
	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
)

// page is the operator's page served for a run (Config.UI, tether chaos
// --ui): the fleet as the run shakes it, and each kill and fault as the
// plan carries it out. A nil *page does nothing.
type page struct {
	srv *metrics.Server
	m   *metrics.Metrics
	ui  *ui.UI
}

// servePage serves the page on a loopback port, logging in with a token
// written to the run's data directory, and tells cfg.OnUI where.
func servePage(cfg Config, e *process.Embedded, m *metrics.Metrics, dir string) (*page, error) {
	token, err := api.LoadOrCreateToken(dir)
	if err != nil {
		return nil, err
	}
	srv, err := metrics.Serve("127.0.0.1:0", m, nil)
	if err != nil {
		return nil, err
	}
	u, url, err := process.ServeUI(srv, token, e, m)
	if err != nil {
		return nil, errors.Join(err, srv.Close(context.Background()))
	}
	if cfg.OnUI != nil {
		cfg.OnUI(url, filepath.Join(dir, api.TokenFile))
	}
	return &page{srv: srv, m: m, ui: u}, nil
}

// action shows a of the plan on the page: kills, machines and faults
// (the workloads' churn shows in the events).
func (p *page) action(a Action, n cloud.NodeName) {
	if p == nil {
		return
	}
	kind := "fault"
	switch {
	case strings.HasPrefix(a.Kind, "kill-") || strings.HasPrefix(a.Kind, "restart-"):
		kind = "kill"
	case strings.HasSuffix(a.Kind, "-instance"):
		kind = "machine"
	case strings.HasSuffix(a.Kind, "-workload"):
		return
	}
	text := a.Kind
	switch a.Kind {
	case KillVolume, ConsoleDetach:
		text += " " + string(volName(a.Volume))
	case KillNode, KillAgent, RestartAgent, Terminate, ReplaceInstance, DeleteInstance, StartInstance:
		text += " " + string(n)
	}
	if a.How != "" {
		text += fmt.Sprintf(" (%s)", a.How)
	}
	p.ui.Notice(kind, text)
}

// close stops the page, then its listener.
func (p *page) close() error {
	if p == nil {
		return nil
	}
	p.ui.Close()
	return errors.Join(p.srv.Close(context.Background()), p.m.Shutdown(context.Background()))
}
