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
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tether:", err)
		os.Exit(exitCode(err))
	}
}

// newRoot builds the command tree (fresh flags each time, so tests can run
// commands in process).
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "tether",
		Short:         "tether attaches cloud volumes to nodes and mounts them for workloads",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(demoCommand(), chaosCommand(), upCommand(), certsCommand(), applyCommand(), getCommand(), describeCommand(), deleteCommand(), nodeCommand())
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return envFallback(cmd) }
	return root
}

// exitCode maps a command's error to the process's exit code.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u) || isUsage(err):
		return exitUsage
	}
	return exitError
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
