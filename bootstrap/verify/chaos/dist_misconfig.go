package chaos

import (
	"fmt"
	"time"

	"github.com/tether/tether/bootstrap/process/distributed"
	"github.com/tether/tether/bootstrap/verify/journal"
)

// The misconfigured member: a distributed run is over remote mutual TLS,
// and now and then one more member starts that breaks it (without the
// remote TLS flags, or with a certificate of another CA). It reaches etcd
// and the cloud as the others do, but no peer completes a handshake with
// it, so the join gate must keep it out of the placement: it must never
// act, and must give up and exit non-zero once its join bound passed.

// misconfiguredJoin is a misconfigured member's --join-timeout; it must
// have exited within misconfiguredBound of its start (the join bound, the
// process's start and stop, and a loaded machine's slack).
const (
	misconfiguredJoin  = 4 * time.Second
	misconfiguredBound = misconfiguredJoin + 20*time.Second
)

// JoinGate names the rule a misconfigured member must keep: it never
// joins nor acts (its journal records its start and nothing else: no
// join, no cloud call, no node status write, no event, no actor restart),
// and it exits non-zero by itself once its join bound passed. A member
// that joined although no peer reaches it need not act (the placement
// may give it nothing it is asked for), so its join is a violation of its
// own.
const JoinGate = "join-gate"

// outsider is one misconfigured member of a run, and how it ended.
type outsider struct {
	index   int
	kind    distributed.Misconfig
	journal string
	started time.Time
	// ended: it exited by itself within misconfiguredBound, with exit
	// (nil: status 0); else it was stopped.
	ended bool
	exit  error
}

// misconfigured starts a misconfigured member (one at a time; the cloud
// must run, or it would fail before it ever tries to join).
func (r *distRunner) misconfigured(other int) error {
	if r.outsider != nil || r.cloudDown {
		return nil
	}
	kind := distributed.NoRemoteTLS
	if other%2 == 1 {
		kind = distributed.ForeignCA
	}
	i, err := r.f.StartMisconfiguredController(kind, misconfiguredJoin)
	if err != nil {
		return err
	}
	r.count(MisconfiguredMember + "/" + kind.String())
	r.noteAll("misconfigured member %d (%s) started", i, kind)
	r.outsider = &outsider{index: i, kind: kind, journal: r.f.ControllerJournal(i), started: time.Now()}
	return nil
}

// endMisconfigured waits for the misconfigured member to have exited (up
// to misconfiguredBound after its start), and stops it if it still runs.
func (r *distRunner) endMisconfigured() error {
	o := r.outsider
	if o == nil {
		return nil
	}
	r.outsider = nil
	o.ended, o.exit = r.f.ControllerExit(o.index, max(time.Second, time.Until(o.started.Add(misconfiguredBound))))
	if !o.ended {
		if _, _, err := r.f.TerminateController(o.index, 10*time.Second); err != nil {
			r.warn(fmt.Errorf("stopping misconfigured member %d: %w", o.index, err))
		}
	}
	r.noteAll("misconfigured member %d (%s) ended (by itself: %v, %v)", o.index, o.kind, o.ended, o.exit)
	r.outsiders = append(r.outsiders, *o)
	return nil
}

// judgeOutsiders judges every misconfigured member of the run on its
// journal (JoinGate).
func (r *distRunner) judgeOutsiders() []Violation {
	var out []Violation
	for _, o := range r.outsiders {
		recs, err := journal.Read(o.journal)
		out = append(out, judgeOutsider(o, recs, err)...)
	}
	return out
}

// judgeOutsider judges one misconfigured member: its journal (recs, or
// the error reading it) records its start and nothing else (no join, no
// action), and it exited non-zero by itself.
func judgeOutsider(o outsider, recs []journal.Record, readErr error) []Violation {
	who := fmt.Sprintf("misconfigured member %d (%s)", o.index, o.kind)
	v := func(at time.Time, format string, args ...any) Violation {
		return Violation{Invariant: JoinGate, Time: at, Detail: who + ": " + fmt.Sprintf(format, args...)}
	}
	var out []Violation
	switch {
	case readErr != nil:
		out = append(out, v(o.started, "its journal cannot be read: %v", readErr))
	case len(recs) == 0 || recs[0].Kind != journal.KindStart:
		out = append(out, v(o.started, "its journal does not record its start: it never ran, so nothing was judged"))
	}
	for _, rec := range recs {
		if rec.Kind == journal.KindStart {
			continue
		}
		what := "acted"
		if rec.Kind == journal.KindJoined {
			what = "joined the placement"
		}
		out = append(out, v(time.Unix(0, rec.Time), "it %s although no peer could reach it: %s %s node=%s volume=%s %s", what, rec.Kind, rec.Op, rec.Node, rec.Volume, rec.Text))
	}
	switch {
	case !o.ended:
		out = append(out, v(o.started.Add(misconfiguredBound), "still running %v after its start (join bound %v): it must give up and exit", misconfiguredBound, misconfiguredJoin))
	case o.exit == nil:
		out = append(out, v(o.started, "exited 0: a member that cannot join must fail"))
	}
	return out
}
