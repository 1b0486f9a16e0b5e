package slogrus

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sirupsen/logrus"
)

// Proto.Actor logs through log/slog, tether through logrus. slogHandler
// forwards slog records to a logrus.Logger so a process has one log stream,
// one format and one level setting. Attributes become logrus fields; groups
// qualify their attributes' keys with dots ("group.key"). Levels map down to
// the nearest logrus level: below Info is Debug, below Warn is Info, below
// Error is Warn, anything higher is Error (slog has no Fatal or Panic, and a
// library record must never exit the process).

// NewSlogHandler returns a slog.Handler that writes every record to l.
func NewSlogHandler(l *logrus.Logger) slog.Handler {
	return &slogHandler{log: l}
}

// LoggerFactory routes Proto.Actor's logs into l; pass it to
// actor.WithLoggerFactory. Records carry lib=Proto.Actor and the system ID,
// as Proto.Actor's own default logger does.
func LoggerFactory(l *logrus.Logger) func(*actor.ActorSystem) *slog.Logger {
	return func(system *actor.ActorSystem) *slog.Logger {
		return slog.New(NewSlogHandler(l)).With("lib", "Proto.Actor", "system", system.ID)
	}
}

// DiscardLoggerFactory silences Proto.Actor, for tests.
func DiscardLoggerFactory() func(*actor.ActorSystem) *slog.Logger {
	return func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }
}

type slogHandler struct {
	log    *logrus.Logger
	fields logrus.Fields // from WithAttrs, keys already qualified; never mutated
	prefix string        // open groups, each followed by a dot
}

func (h *slogHandler) Enabled(_ context.Context, level slog.Level) bool {
	return h.log.IsLevelEnabled(logrusLevel(level))
}

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	fields := make(logrus.Fields, len(h.fields)+r.NumAttrs())
	for k, v := range h.fields {
		fields[k] = v
	}
	r.Attrs(func(a slog.Attr) bool {
		addAttr(fields, h.prefix, a)
		return true
	})
	entry := h.log.WithFields(fields)
	if !r.Time.IsZero() {
		entry = entry.WithTime(r.Time)
	}
	entry.Log(logrusLevel(r.Level), r.Message)
	return nil
}

func (h *slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	fields := make(logrus.Fields, len(h.fields)+len(attrs))
	for k, v := range h.fields {
		fields[k] = v
	}
	for _, a := range attrs {
		addAttr(fields, h.prefix, a)
	}
	return &slogHandler{log: h.log, fields: fields, prefix: h.prefix}
}

func (h *slogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &slogHandler{log: h.log, fields: h.fields, prefix: h.prefix + name + "."}
}

// addAttr stores a under prefix+key, following slog's rules: empty attrs
// are dropped, a group's attrs are qualified by its key, and a group
// without a key is inlined.
func addAttr(fields logrus.Fields, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		attrs := a.Value.Group()
		if len(attrs) == 0 {
			return
		}
		if a.Key != "" {
			prefix += a.Key + "."
		}
		for _, ga := range attrs {
			addAttr(fields, prefix, ga)
		}
		return
	}
	fields[prefix+a.Key] = a.Value.Any()
}

func logrusLevel(l slog.Level) logrus.Level {
	switch {
	case l < slog.LevelInfo:
		return logrus.DebugLevel
	case l < slog.LevelWarn:
		return logrus.InfoLevel
	case l < slog.LevelError:
		return logrus.WarnLevel
	default:
		return logrus.ErrorLevel
	}
}
