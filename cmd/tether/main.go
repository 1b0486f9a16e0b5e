// Command tether attaches cloud volumes to nodes and keeps them where the
// workloads want them. See README.md.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes: 0 ok, 1 error, 2 usage.
const (
	exitError = 1
	exitUsage = 2
)

type usageError struct{ error }

func main() {
	root := &cobra.Command{
		Use:           "tether",
		Short:         "tether attaches cloud volumes to nodes and mounts them for workloads",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(demoCommand(), chaosCommand(), upCommand(), applyCommand(), getCommand(), describeCommand(), deleteCommand(), nodeCommand())
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return envFallback(cmd) }
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tether:", err)
		var u usageError
		if errors.As(err, &u) || isUsage(err) {
			os.Exit(exitUsage)
		}
		os.Exit(exitError)
	}
}

// isUsage recognizes cobra's own usage errors (unknown command, args).
func isUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "accepts ", "requires ", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

var errNodes = errors.New("--nodes must be at least 1")
