package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tether/tether/bootstrap/process"
)

// csiFlags adds tether up's --csi-controller-socket and --csi-node-socket.
func csiFlags(f *pflag.FlagSet, c *process.CSIConfig) {
	f.StringVar(&c.ControllerSocket, "csi-controller-socket", "", "unix socket of a CSI driver's controller plugin: the driver is the cloud, instead of --cloud (with --csi-node-socket; one node, n1; volumes must exist in the driver)")
	f.StringArrayVar(&c.NodeSockets, "csi-node-socket", nil, "unix socket of that CSI driver's node plugin on this machine: n1, whose instance is the plugin's node ID, mounts through it (with --csi-controller-socket); given N times, nodes n1..nN each mount through their own plugin (several node plugins on one machine, each with its own node ID)")
	f.DurationVar(&c.DialTimeout, "csi-wait", process.DefaultCSIDialTimeout, "how long to wait at start for the CSI plugins to be ready (Probe, GetPluginInfo, NodeGetInfo asked again with backoff), then fail saying which did not answer")
}

// csiConflicts are tether up's flags that configure another cloud.
var csiConflicts = append([]string{"cloud", "loop-volume-size"}, simOnlyFlags...)

// checkCSI refuses, before anything starts, one CSI socket without the
// other, a socket path that exists and is no socket, another cloud's
// flags with them, and --nodes other than 1 (one node plugin serves one
// node). With both sockets it makes cfg a CSI tether of one node and
// reports true.
func (v *validator) checkCSI(cfg *process.Config) (bool, error) {
	ctl, nd := v.given("csi-controller-socket"), v.given("csi-node-socket")
	switch {
	case !ctl && !nd:
		return false, nil
	case !nd:
		v.refuse("csi-controller-socket", "needs --csi-node-socket too: tether drives a CSI driver through both its plugins")
	case !ctl:
		v.refuseValue("csi-node-socket", strings.Join(v.stringArray("csi-node-socket"), ","), "needs --csi-controller-socket too: tether drives a CSI driver through both its plugins")
	}
	nodeSockets := v.stringArray("csi-node-socket")
	paths := map[string][]string{"csi-controller-socket": {v.fs.Lookup("csi-controller-socket").Value.String()}, "csi-node-socket": nodeSockets}
	for _, name := range []string{"csi-controller-socket", "csi-node-socket"} {
		for _, path := range paths[name] {
			v.checkSocket(name, path)
		}
	}
	if d, _ := v.fs.GetDuration("csi-wait"); d <= 0 {
		v.refuse("csi-wait", "want a positive duration (1m, 30s)")
	}
	for _, name := range csiConflicts {
		if v.fs.Lookup(name) != nil && v.given(name) {
			v.refuse(name, "applies to the sim or loop cloud, not with --csi-controller-socket and --csi-node-socket (the CSI driver is the cloud)")
		}
	}
	sockets := len(nodeSockets)
	if v.given("nodes") {
		if n, _ := v.fs.GetInt("nodes"); n != sockets {
			v.refuse("nodes", fmt.Sprintf("want %d with --csi-node-socket given %d times: a CSI node plugin serves one node", sockets, sockets))
		}
	}
	cfg.Cloud, cfg.Nodes = process.CloudCSI, sockets
	return true, v.err
}

// checkSocket refuses a socket path that is empty, or exists and is no
// socket. A socket not there yet is waited for (the driver may start
// after tether); anything else there is a mistake.
func (v *validator) checkSocket(name, path string) {
	if path == "" {
		v.refuseValue(name, path, "want the path of a unix socket")
		return
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Type() != fs.ModeSocket {
		v.refuseValue(name, path, "is not a unix socket ("+fi.Mode().Type().String()+"): want the socket a CSI plugin listens on")
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		v.refuseValue(name, path, err.Error())
	}
}

// stringArray is the values of a flag given several times, as given
// (pflag's GetStringArray reads "" back as no value at all).
func (v *validator) stringArray(name string) []string {
	if sv, ok := v.fs.Lookup(name).Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
	return nil
}
