package main

import (
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// Flags fall back to TETHER_<FLAG> when not given; a given flag wins; a
// malformed value is a usage error.
func TestEnvFallback(t *testing.T) {
	var cf clientFlags
	cmd := &cobra.Command{Use: "x"}
	cf.register(cmd.Flags())
	t.Setenv("TETHER_ADDR", "127.0.0.1:1")
	t.Setenv("TETHER_TIMEOUT", "7s")
	if err := cmd.Flags().Parse([]string{"--addr", "127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	if err := envFallback(cmd); err != nil {
		t.Fatal(err)
	}
	if cf.addr != "127.0.0.1:2" || cf.timeout != 7*time.Second {
		t.Fatalf("addr %q timeout %s; want the flag's address and the environment's timeout", cf.addr, cf.timeout)
	}
	t.Setenv("TETHER_TIMEOUT", "soon")
	var cf2 clientFlags
	cmd2 := &cobra.Command{Use: "y"}
	cf2.register(cmd2.Flags())
	err := envFallback(cmd2)
	if _, usage := err.(usageError); !usage {
		t.Fatalf("err = %v, want a usage error naming TETHER_TIMEOUT", err)
	}
}
