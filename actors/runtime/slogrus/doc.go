// Package slogrus bridges Proto.Actor's log/slog output into logrus, so a
// tether process has one log stream, one format and one level setting. It
// never writes anywhere of its own.
//
// See docs/operating.md#flags-of-tether-up (--log-level, --log-format).
package slogrus
