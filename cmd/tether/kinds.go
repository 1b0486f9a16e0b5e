package main

import (
	"fmt"
	"strings"
)

// checkKind refuses a kind argument the server would refuse, before
// anything is dialled: a usage error naming what is allowed. It accepts
// what the API accepts (the kind, its plural, vol and wl, in any case).
func checkKind(arg string) error {
	switch strings.ToLower(arg) {
	case "volume", "volumes", "vol", "vols", "node", "nodes", "workload", "workloads", "wl":
		return nil
	}
	return usageError{fmt.Errorf("unknown kind %q: want volumes, nodes, workloads (or events, for get)", arg)}
}

// checkNames refuses an empty name argument: no object has one.
func checkNames(names []string) error {
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			return usageError{fmt.Errorf("name %q: want an object's name", n)}
		}
	}
	return nil
}
