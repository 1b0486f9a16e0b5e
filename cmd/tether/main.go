package main

import (
	"errors"
	"fmt"
	"os"

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
	root.AddCommand(demoCommand(), chaosCommand(), benchCommand(), cloudCommand(), controllerCommand(), agentCommand(), upCommand(), certsCommand(), applyCommand(), getCommand(), describeCommand(), deleteCommand(), nodeCommand())
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return envFallback(cmd) }
	markRunErrors(root)
	return root
}

// exitCode maps a command's error to the process's exit code: a
// usageError, or an error of cobra's own (unknown command or flag, wrong
// arguments: it comes before the command runs), is 2; any other error a
// command returned once it ran is 1, whatever its text says.
func exitCode(err error) int {
	var u usageError
	var r runError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u):
		return exitUsage
	case errors.As(err, &r):
		return exitError
	}
	return exitUsage
}

// runError marks an error that a command returned once it ran.
type runError struct{ error }

func (e runError) Unwrap() error { return e.error }

// markRunErrors wraps the RunE of c and its subcommands so that their
// errors are runErrors (usageErrors stay as they are).
func markRunErrors(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			err := run(cmd, args)
			var u usageError
			if err == nil || errors.As(err, &u) {
				return err
			}
			return runError{err}
		}
	}
	for _, sub := range c.Commands() {
		markRunErrors(sub)
	}
}
