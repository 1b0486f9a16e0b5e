package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tether/tether/bootstrap/process"
)

// Bounds of --loop-volume-size: mkfs.ext4 wants a few MiB for its journal;
// 16 TiB is ext4's largest file with 4 KiB blocks (the image is sparse:
// it takes space only as it is written).
const (
	minLoopVolumeSize = 4 << 20
	maxLoopVolumeSize = 16 << 40
)

// geteuid is os.Geteuid; tests replace it.
var geteuid = os.Geteuid

// simOnlyFlags are tether up's flags that configure the sim cloud.
var simOnlyFlags = []string{"sim-latency", "sim-throttle", "sim-attach-limit"}

// cloudFlags adds --cloud and --loop-volume-size.
func cloudFlags(f *pflag.FlagSet, kind *string, size *int64) {
	*size = process.DefaultLoopVolumeSize
	f.StringVar(kind, "cloud", process.CloudSim, "the cloud the nodes run on: sim (in memory) or loop (image files attached as real loop devices, formatted ext4 and mounted; root only)")
	f.Var((*byteSize)(size), "loop-volume-size", "size of each disk tether creates on --cloud loop: bytes, or with a unit KiB, MiB, GiB or TiB (a sparse image: it takes space as it is written)")
}

// checkCloud refuses, before anything starts, a --cloud that is neither
// sim nor loop, --cloud loop when not root, and the flags of one cloud
// given with the other.
func (v *validator) checkCloud() error {
	kind := v.fs.Lookup("cloud").Value.String()
	switch kind {
	case process.CloudSim:
		if v.given("loop-volume-size") {
			v.refuse("loop-volume-size", "applies to --cloud loop only")
		}
	case process.CloudLoop:
		for _, name := range simOnlyFlags {
			if v.fs.Lookup(name) != nil && v.given(name) {
				v.refuse(name, "applies to --cloud sim only (the loop cloud injects no latency, throttling or attach limit of its own)")
			}
		}
		if n := *(*int64)(v.fs.Lookup("loop-volume-size").Value.(*byteSize)); n < minLoopVolumeSize || n > maxLoopVolumeSize || n%512 != 0 {
			v.refuse("loop-volume-size", fmt.Sprintf("want %s to %s, a multiple of 512 bytes", formatSize(minLoopVolumeSize), formatSize(maxLoopVolumeSize)))
		}
		if uid := geteuid(); uid != 0 {
			v.refuse("cloud", fmt.Sprintf("needs root (running as uid %d): the loop cloud binds loop devices, and its node agents format and mount filesystems on them; run tether as root, or use --cloud sim", uid))
		}
	default:
		v.refuse("cloud", "want sim or loop")
	}
	return v.err
}

// given reports whether a flag was set, on the command line or from its
// TETHER_<FLAG> variable.
func (v *validator) given(name string) bool {
	_, env := os.LookupEnv("TETHER_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")))
	return v.fs.Changed(name) || env
}

// byteSize is a size flag: bytes, or a number with a binary unit.
type byteSize int64

var units = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

func (s *byteSize) String() string { return formatSize(int64(*s)) }

func (s *byteSize) Type() string { return "size" }

func (s *byteSize) Set(v string) error {
	num, shift := strings.TrimSpace(v), uint(0)
	for _, u := range units {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, shift = strings.TrimSpace(n), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return fmt.Errorf("%q: want a size such as 67108864, 64MiB or 1GiB", v)
	}
	*s = byteSize(n << shift)
	return nil
}

// formatSize writes n with the largest unit that divides it.
func formatSize(n int64) string {
	for _, u := range units {
		if u.shift > 0 && n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
