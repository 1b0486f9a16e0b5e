package mount

import (
	"context"
	"errors"
	"fmt"
)

// inspectAll fills in the State and Source of every entry by inspect. Without a ctx
// that can be done it inspects them one by one. Otherwise each Inspect runs
// in its own goroutine (all at once, so that one hung target costs the
// others nothing) and the entries still unanswered when ctx is done get
// State Unknown; their goroutines write into a buffer that never blocks,
// so each ends as soon as its call returns.
func inspectAll(ctx context.Context, inspect inspectFunc, entries []Entry) error {
	if ctx.Done() == nil {
		for i := range entries {
			if err := inspectOne(inspect, &entries[i]); err != nil {
				return err
			}
		}
		return nil
	}
	type answer struct {
		i   int
		e   Entry
		err error
	}
	answers := make(chan answer, len(entries))
	for i, e := range entries {
		go func() {
			err := inspectOne(inspect, &e)
			answers <- answer{i, e, err}
		}()
	}
	answered := make([]bool, len(entries))
	var errs []error
	for range entries {
		select {
		case a := <-answers:
			entries[a.i], answered[a.i] = a.e, true
			errs = append(errs, a.err)
		case <-ctx.Done():
			for i := range entries {
				if !answered[i] {
					entries[i].State, entries[i].Source = Unknown, ""
				}
			}
			return errors.Join(errs...)
		}
	}
	return errors.Join(errs...)
}

// inspectFunc is a Mounter's Inspect.
type inspectFunc func(target string) (State, string, error)

// sharedInspector is a Mounter that can inspect many targets with one read
// of what they all need (the bind mounter: the mount table). Scan uses it
// where its Mounter is one (not one wrapped in another type).
type sharedInspector interface {
	// inspector returns Inspect for one Scan, asked for now.
	inspector() func(target string) (State, string, error)
}

func inspectOne(inspect inspectFunc, e *Entry) error {
	var err error
	e.State, e.Source, err = inspect(e.Path)
	if err != nil {
		return fmt.Errorf("mount: scan: %w", err)
	}
	return nil
}
