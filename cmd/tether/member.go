package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tether/tether/bootstrap/process/distributed"
)

// calmAfter: a member that kept its place this long starts its rejoin pause
// curve over.
const calmAfter = 5 * time.Minute

// runMember runs a controller member until ctx ends. A member that lost its
// place in the cluster (its etcd lease lapsed: the others took its actors
// over and block its identity) stops and joins again as a new member, after
// a pause that grows while that keeps happening; a join that fails then
// (etcd still too slow to answer) is tried again the same way, for as long
// as it takes. Only the first start's failure ends the command: that is a
// configuration the operator must see. With a chaos control on stdin a lost
// member exits instead (the control cannot be handed on).
func runMember(ctx context.Context, out io.Writer, cfg distributed.MemberConfig) error {
	cfg.Context = ctx // a SIGTERM ends the wait for the peers too
	m, err := distributed.StartMember(cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil // asked to stop while joining
		}
		return err
	}
	pause, started := time.Second, time.Now()
	for {
		fmt.Fprintf(out, "tether controller member: remote %s, API %s\n", m.System.Address(), m.APIAddr())
		if u := m.UIAddr(); u != "" {
			fmt.Fprintf(out, "  UI       %s\n", u)
		}
		select {
		case <-ctx.Done():
			return stopWithin(m, memberStopBound)
		case lost := <-m.Lost():
			if time.Since(started) > calmAfter {
				pause = time.Second // a loss long after the last one starts the curve again
			}
			stopErr := m.Stop()
			if cfg.Control != nil {
				return errors.Join(lost, stopErr)
			}
			log := m.Log
			for {
				log.WithError(stopErr).Warnf("joining the cluster again as a new member in %v", pause)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(pause): // a restart delay, not a synchronization
				}
				pause = min(2*pause, 30*time.Second)
				if m, err = distributed.StartMember(cfg); err == nil {
					started = time.Now()
					break
				}
				if errors.Is(err, distributed.ErrPeersUnreachable) {
					// Cut off from its peers (etcd reachable or not): a
					// member they cannot reach must not serve; say so
					// and end, non-zero.
					return err
				}
				stopErr = err
			}
		}
	}
}

// memberStopBound bounds a member's stop after SIGTERM or SIGINT.
const memberStopBound = 9 * time.Second

// stopWithin stops m, or stops waiting for it after d. tether is crash
// only (a kill at any moment loses nothing: a successor reads the intents,
// the others take the actors over once the lease lapses), so a stop that
// hangs, on peers it cannot reach or an etcd that is down, must not hold
// the process past what an operator's SIGTERM allows.
func stopWithin(m *distributed.Member, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- m.Stop() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		m.Log.Warnf("stopping took longer than %v: exiting anyway (nothing is lost: the others take this member's actors over once its lease lapses)", d)
		return nil
	}
}
