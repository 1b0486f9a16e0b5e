package distributed

import (
	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/bootstrap/operator/ui"
)

// servePage serves the operator's page at /ui/ on the member's metrics
// listener (loopback), logging in with the API's token: the fleet as this
// member's controller sees it, events from the shared log (every
// member's and agent's). Without a token there is nothing to log in
// with, and no page.
func (m *Member) servePage(cfg MemberConfig) error {
	if cfg.APIToken == "" {
		m.Log.Info("no page at /ui/: it logs in with the API's token, and --token is empty")
		return nil
	}
	src := &ui.Controller{Ctl: func() *controller.Controller { return m.Controller }, Cloud: m.nodes(),
		Metrics: m.metrics, Subscribe: m.events.Subscribe}
	page, err := ui.Start(src, ui.Options{Token: cfg.APIToken, Logf: m.Log.Warnf})
	if err != nil {
		return err
	}
	if err := page.Mount(m.msrv); err != nil {
		page.Close()
		return err
	}
	m.page = page
	return nil
}

// UIAddr is the page's address ("" without one).
func (m *Member) UIAddr() string {
	if m.page == nil {
		return ""
	}
	return ui.URL(m.msrv)
}
