package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tether/tether/cloud/csi/csitest"
)

func main() {
	dir := flag.String("dir", "", "directory for controller.sock and node.sock (created; required)")
	vols := flag.String("volumes", "", "comma-separated IDs of the volumes the driver has")
	nodeID := flag.String("node-id", "node-1", "the node plugin's node ID; comma-separated for a node plugin per ID (on <id>.sock)")
	maxVols := flag.Int64("max-volumes", 0, "the node's max_volumes_per_node (0: none)")
	every := flag.Duration("every", 5*time.Second, "how often to print the driver's state (0: at exit only)")
	loose := flag.Bool("loose", false, "no LIST_VOLUMES_PUBLISHED_NODES: GET_VOLUME, with published_node_ids filled loosely (tether demo --csi's shape)")
	flag.Parse()
	ids := strings.Split(*nodeID, ",")
	nodes := map[string]int64{}
	for _, id := range ids {
		nodes[id] = *maxVols
	}
	cfg := csitest.Config{Nodes: nodes, List: true, ListPublished: true, StageUnstage: true}
	if *loose {
		cfg = csitest.Config{Nodes: cfg.Nodes, EnforceNodeLimit: true, StageUnstage: true, GetVolume: true, LoosePublishedNodes: true}
	}
	if err := run(cfg, *dir, *vols, ids, *every); err != nil {
		fmt.Fprintln(os.Stderr, "csifake:", err)
		os.Exit(1)
	}
}

func run(cfg csitest.Config, dir, vols string, ids []string, every time.Duration) error {
	if dir == "" {
		return fmt.Errorf("--dir is required")
	}
	for _, id := range ids {
		// A node ID names a socket file when there are several.
		if id == "" || strings.ContainsAny(id, "/\\\x00") || id == "." || id == ".." {
			return fmt.Errorf("--node-id %q: want a node ID without slashes", id)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	d := csitest.New(cfg)
	for _, v := range strings.Split(vols, ",") {
		if v = strings.TrimSpace(v); v != "" {
			d.AddVolume(v)
		}
	}
	ctl := filepath.Join(dir, "controller.sock")
	stopCtl, err := d.Listen(ctl, "")
	if err != nil {
		return err
	}
	defer os.Remove(ctl)
	defer stopCtl()
	fmt.Printf("csifake: controller plugin at %s\n", ctl)
	for _, id := range ids {
		nd := filepath.Join(dir, "node.sock")
		if len(ids) > 1 {
			nd = filepath.Join(dir, id+".sock")
		}
		stopNode, err := d.Listen(nd, id)
		if err != nil {
			return err
		}
		defer os.Remove(nd)
		defer stopNode()
		fmt.Printf("csifake: node plugin (node ID %s) at %s\n", id, nd)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			fmt.Printf("csifake: %s", d.Describe())
		case <-sig:
			fmt.Println("csifake: calls received:")
			for _, c := range d.Calls() {
				fmt.Println("  " + c.String())
			}
			fmt.Printf("csifake: state at exit:\n%s", d.Describe())
			return nil
		}
	}
}
