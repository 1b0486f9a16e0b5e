package process

import (
	"errors"

	"github.com/tether/tether/actors/metrics"
	"github.com/tether/tether/bootstrap/operator/ui"
)

// ServeUI serves the operator's page (bootstrap/operator/ui) on msrv for
// e, logging in with the API's token, reading e's controller, cloud and
// events and m's counters. On a listener the token must not cross (plain
// text beyond loopback) the page is not served: the returned UI is then
// nil (its methods do nothing) and the address says why. Close it before
// e stops.
func ServeUI(msrv *metrics.Server, token string, e *Embedded, m *metrics.Metrics) (*ui.UI, string, error) {
	src := &ui.Controller{Ctl: e.Ctl, Cloud: e.Account, Metrics: m, Subscribe: e.Events.Subscribe}
	page, err := ui.Start(src, ui.Options{Token: token, Logf: e.Log.Warnf})
	if err != nil {
		return nil, "", err
	}
	if err := page.Mount(msrv); err != nil {
		page.Close()
		if errors.Is(err, ui.ErrNotPrivate) {
			e.Log.Warn(err)
			return nil, "not served (metrics in plain text beyond loopback: give them TLS)", nil
		}
		return nil, "", err
	}
	return page, ui.URL(msrv), nil
}
