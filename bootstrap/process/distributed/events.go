package distributed

import (
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/bootstrap/process"
)

// persistEvents makes rec write to l (the event log in etcd beside the
// store, shared by every member and agent) and returns the writer to
// close on stop.
func persistEvents(rec *events.Recorder, l events.Log, log *logrus.Logger) *events.Writer {
	w := process.NewEventWriter(l, log)
	rec.Persist(w)
	return w
}

// closeEvents writes what is queued and stops w (nil: nothing).
func closeEvents(w *events.Writer, log *logrus.Logger) {
	if w == nil {
		return
	}
	w.Close()
	if s := w.Stats(); s.Dropped+s.Failed > 0 {
		log.WithFields(logrus.Fields{"dropped": s.Dropped, "failed": s.Failed, "written": s.Written}).Warn("events lost since start (the event log was slow or down)")
	}
}
