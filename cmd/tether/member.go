package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tether/tether/bootstrap/distributed"
)

// runMember runs a controller member until ctx ends. A member that lost its
// place in the cluster (its etcd lease lapsed: the others took its actors
// over and block its identity) stops and joins again as a new member, after
// a pause that grows while that keeps happening. With a chaos control on
// stdin it exits instead (the control cannot be handed on).
func runMember(ctx context.Context, out io.Writer, cfg distributed.MemberConfig) error {
	pause := time.Second
	for {
		m, err := distributed.StartMember(cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "tether controller member: remote %s, API %s\n", m.System.Address(), m.APIAddr())
		select {
		case <-ctx.Done():
			return m.Stop()
		case lost := <-m.Lost():
			stopErr := m.Stop()
			if cfg.Control != nil {
				return errors.Join(lost, stopErr)
			}
			m.Log.WithError(stopErr).Warnf("joining the cluster again as a new member in %v", pause)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(pause): // a restart delay, not a synchronization
			}
			pause = min(2*pause, 30*time.Second)
		}
	}
}
