package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tether/tether/bootstrap/process"
)

// Bounds of the flags. Below them tether either hammers the cloud or
// times out calls a cloud answers in time; DESIGN.md's defaults sit well
// inside them.
const (
	// minSyncPeriod: each sync makes one cloud call per node; Kubernetes'
	// attach-detach controller refuses a reconcile sync period under one
	// second too (its default and ours: 60s).
	minSyncPeriod = time.Second
	// minCloudTimeout: every cloud call is bounded by it (default 1m).
	minCloudTimeout = time.Second
	// minClientTimeout: a call is a connection, a token check and a store
	// write (default 30s).
	minClientTimeout = 100 * time.Millisecond
	// minStepTimeout, minChaosDuration: shorter demo steps cannot
	// converge, shorter chaos runs inject next to no faults.
	minStepTimeout   = time.Second
	minChaosDuration = time.Second
	// maxNodes: tether up and chaos run every node's agent in one process.
	maxNodes = 1000
	// Sim throttle: 0 is unlimited; under 0.1 calls/s the sim only ever
	// throttles; over 1e6, say 0 (and the sim's bucket, int(rate) calls,
	// stays well within an int).
	minThrottle, maxThrottle = 0.1, 1e6
)

// validateUp checks tether up's flags; a refusal is a usage error naming
// the flag, its value and what is allowed.
func validateUp(fs *pflag.FlagSet) error {
	v := validator{fs: fs}
	v.nonEmpty("data-dir")
	v.hostPort("api-addr")
	v.hostPort("metrics-addr")
	v.distinctAddrs("metrics-addr", "api-addr")
	v.count("nodes", 1, maxNodes, "tether up runs every node's agent in this one process")
	v.controllerFlags()
	v.eventFlags()
	v.atLeast("sim-latency", 0, "latency the sim adds to each call")
	v.below("sim-latency", "cloud-timeout")
	v.rate("sim-throttle")
	v.logging("log-level", "log-format")
	return v.err
}

// validateDemo checks tether demo's flags.
func validateDemo(fs *pflag.FlagSet) error {
	v := validator{fs: fs}
	v.atLeast("sync-period", minSyncPeriod, "each sync makes one cloud call per node; default 2s for the demo")
	v.atLeast("step-timeout", minStepTimeout, "how long each step may take to converge; default 30s")
	return v.err
}

// validateChaos checks tether chaos's flags.
func validateChaos(fs *pflag.FlagSet) error {
	v := validator{fs: fs}
	v.atLeast("duration", minChaosDuration, "faults are injected over it; default 20s")
	v.count("volumes", 1, unbounded, "the workloads need volumes to use")
	v.count("nodes", 2, maxNodes, "chaos moves workloads between nodes, all in this one process")
	v.rate("cloud-qps")
	v.count("cloud-burst", 1, 1_000_000, "calls that may go at once after a quiet spell")
	v.count("cloud-max-inflight", 0, 1_000_000, "0: no bound")
	return v.err
}

// validateClient checks the flags of the commands that call a running
// tether.
func validateClient(fs *pflag.FlagSet) error {
	v := validator{fs: fs}
	v.atLeast("timeout", minClientTimeout, "bound of the whole call; default 30s, 10m for apply")
	return v.err
}

// validator checks flags in order; the first refusal sticks in err.
type validator struct {
	fs  *pflag.FlagSet
	err error
}

// refuse records the first refusal: the flag (or the environment variable
// that set it), its value and what is allowed.
func (v *validator) refuse(name, allowed string) {
	v.refuseValue(name, v.fs.Lookup(name).Value.String(), allowed)
}

// refuseValue is refuse naming val as the flag's value (one of the values
// of a flag given several times).
func (v *validator) refuseValue(name, val, allowed string) {
	if v.err != nil {
		return
	}
	f := v.fs.Lookup(name)
	if val == "" || strings.ContainsAny(val, " \t\n") {
		val = strconv.Quote(val)
	}
	what := "--" + name + " " + val
	// envFallback sets a flag not given from TETHER_<NAME>, leaving it
	// unchanged in pflag's eyes.
	env := "TETHER_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if _, set := os.LookupEnv(env); set && !f.Changed {
		what = env + "=" + val + " (for --" + name + ")"
	}
	v.err = usageError{fmt.Errorf("%s: %s", what, allowed)}
}

func (v *validator) duration(name string) time.Duration {
	d, err := v.fs.GetDuration(name)
	if err != nil {
		panic(err) // a validator names a flag its command does not have
	}
	return d
}

func (v *validator) atLeast(name string, least time.Duration, why string) {
	if v.duration(name) < least {
		v.refuse(name, fmt.Sprintf("want at least %s (%s)", least, why))
	}
}

// below refuses a duration flag not below another one.
func (v *validator) below(name, bound string) {
	if v.duration(name) >= v.duration(bound) {
		v.refuse(name, fmt.Sprintf("want less than --%s %s, or every call times out", bound, v.fs.Lookup(bound).Value))
	}
}

// count refuses an int flag outside least..most (no upper bound if most
// is unbounded).
func (v *validator) count(name string, least, most int, why string) {
	n, err := v.fs.GetInt(name)
	if err != nil {
		panic(err)
	}
	switch {
	case most == unbounded && n < least:
		v.refuse(name, fmt.Sprintf("want at least %d (%s)", least, why))
	case most != unbounded && (n < least || n > most):
		v.refuse(name, fmt.Sprintf("want %d to %d (%s)", least, most, why))
	}
}

const unbounded = -1

// rate accepts 0 (unlimited) or a finite rate within the throttle bounds.
func (v *validator) rate(name string) {
	r, err := v.fs.GetFloat64(name)
	if err != nil {
		panic(err)
	}
	if r != 0 && !(r >= minThrottle && r <= maxThrottle) { // NaN fails both
		v.refuse(name, fmt.Sprintf("want 0 (unlimited) or %s to %s calls per second (a sim slower than one call in 10s only throttles; for more, say 0)",
			strconv.FormatFloat(minThrottle, 'f', -1, 64), strconv.FormatFloat(maxThrottle, 'f', -1, 64)))
	}
}

func (v *validator) nonEmpty(name string) {
	if v.fs.Lookup(name).Value.String() == "" {
		v.refuse(name, "want a path")
	}
}

func (v *validator) hostPort(name string) {
	_, port, err := net.SplitHostPort(v.fs.Lookup(name).Value.String())
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
		v.refuse(name, "want host:port with a port from 0 to 65535 (0: any free port)")
	}
}

// distinctAddrs refuses two listen addresses that are the same host and
// port (port 0, any free port, may repeat): the second listener could
// only fail, after the first had started.
func (v *validator) distinctAddrs(name, other string) {
	a, b := v.fs.Lookup(name).Value.String(), v.fs.Lookup(other).Value.String()
	ha, pa, erra := net.SplitHostPort(a)
	hb, pb, errb := net.SplitHostPort(b)
	if erra != nil || errb != nil || pa != pb || pa == "0" {
		return
	}
	if ha == hb || ha == "" || hb == "" || ha == "0.0.0.0" || hb == "0.0.0.0" || ha == "::" || hb == "::" {
		v.refuse(name, "the same address as --"+other+": want another port")
	}
}

// logging checks the level and the format as the logger will read them.
func (v *validator) logging(level, format string) {
	lv, fm := v.fs.Lookup(level).Value.String(), v.fs.Lookup(format).Value.String()
	if _, err := process.NewLogger(lv, "text", io.Discard); err != nil {
		v.refuse(level, "want debug, info, warn or error")
	}
	if _, err := process.NewLogger("info", fm, io.Discard); err != nil {
		v.refuse(format, "want text or json")
	}
}
