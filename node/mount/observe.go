package mount

import "time"

// Observed returns a Mounter that reports every Stage, Unstage, Publish and
// Unpublish to record (the operation's name: "stage", "unstage", "publish"
// or "unpublish", its error and how long it took) and otherwise behaves
// exactly like mt. Inspect and Name pass through unreported. A nil record
// (or a nil mt) returns mt itself. Metrics use it (bootstrap wires them).
func Observed(mt Mounter, record func(op string, err error, d time.Duration)) Mounter {
	if record == nil || mt == nil {
		return mt
	}
	return &observed{mt: mt, record: record}
}

type observed struct {
	mt     Mounter
	record func(op string, err error, d time.Duration)
}

func (o *observed) Stage(source, target string) error {
	start := time.Now()
	err := o.mt.Stage(source, target)
	o.record("stage", err, time.Since(start))
	return err
}

func (o *observed) Unstage(target string) error {
	start := time.Now()
	err := o.mt.Unstage(target)
	o.record("unstage", err, time.Since(start))
	return err
}

func (o *observed) Publish(staged, target string, readOnly bool) error {
	start := time.Now()
	err := o.mt.Publish(staged, target, readOnly)
	o.record("publish", err, time.Since(start))
	return err
}

func (o *observed) Unpublish(target string) error {
	start := time.Now()
	err := o.mt.Unpublish(target)
	o.record("unpublish", err, time.Since(start))
	return err
}

func (o *observed) Inspect(target string) (State, string, error) { return o.mt.Inspect(target) }

func (o *observed) Name() string { return o.mt.Name() }

// Unwrap returns the observed mounter (Unwrapper).
func (o *observed) Unwrap() Mounter { return o.mt }
