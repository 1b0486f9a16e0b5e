package process

import (
	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
)

// startEvents gives the recorder its durable log: the event buckets of the
// store's file (durable), or memory. Before the controller and the agents
// start, so that no event of theirs misses it.
func (e *Embedded) startEvents() error {
	var l events.Log
	var err error
	if e.bolt != nil {
		l, err = e.bolt.Events(e.cfg.Events)
	} else {
		l, err = store.NewMemoryEvents(e.cfg.Events)
	}
	if err != nil {
		return err
	}
	e.evw = NewEventWriter(l, e.Log)
	e.Events.Persist(e.evw)
	return nil
}

// stopEvents writes the events still queued (a clean stop loses none)
// and stops the writer; after the agents and the controller, before the
// store closes.
func (e *Embedded) stopEvents() {
	if e.evw != nil {
		e.evw.Close()
		if s := e.evw.Stats(); s.Dropped+s.Failed > 0 {
			e.Log.WithFields(logrus.Fields{"dropped": s.Dropped, "failed": s.Failed, "written": s.Written}).Warn("events lost since start (the event log was slow or down)")
		}
	}
}

// NewEventWriter starts the writer of a process's recorder: it logs each failed
// transaction at warning level (not each event: a store that is down
// would say the same thing thousands of times).
func NewEventWriter(l events.Log, log *logrus.Logger) *events.Writer {
	return events.NewWriter(l, events.WriterConfig{OnError: func(err error, lost int) {
		log.WithError(err).WithField("events", lost).Warn("event log: events dropped")
	}})
}

// EventWriter is the embedded process's event writer (nil before start):
// its Stats count what reached the store.
func (e *Embedded) EventWriter() *events.Writer { return e.evw }
