package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/messages"
)

// maxInputBytes bounds what one tether apply reads, over all its -f files
// together. Documents encode smaller than the text they are read from, so
// input within this bound stays within the server's api.MaxApplyBytes.
// The bound is enforced while reading (input.go), and so is
// api.MaxApplyDocuments.
const maxInputBytes = api.MaxApplyBytes

// applyTimeout is apply's default --timeout: 200,000 documents take a
// minute or two (reading, sending, validating, provisioning, committing).
const applyTimeout = 10 * time.Minute

// listedLines: an apply of at most this many objects prints a line per
// object; a larger one prints a summary line.
const listedLines = 100

func applyCommand() *cobra.Command {
	var cf clientFlags
	var files []string
	cmd := &cobra.Command{
		Use:   "apply -f FILE [-f FILE...]",
		Short: "Create or update volumes, nodes and workloads from YAML or JSON files (- for stdin), all or nothing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateClient(cmd.Flags()); err != nil {
				return err
			}
			in, err := readInputs(files, cmd.InOrStdin())
			if err != nil {
				return err
			}
			c, ctx, done, err := cf.open()
			if err != nil {
				return err
			}
			defer done()
			res, err := api.SendBatch(ctx, c, &in.batch)
			if err != nil {
				return in.at.explain(applyError(err))
			}
			printApplied(cmd.OutOrStdout(), res, in.batch.Len())
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, "file to apply (YAML or JSON; - for stdin); repeat -f to apply several files as one all-or-nothing request")
	cf.registerTimeout(cmd.Flags(), applyTimeout)
	return cmd
}

// applyError explains the errors of an apply that rpcError leaves
// unclear.
func applyError(err error) error {
	switch status.Code(err) {
	case codes.Unimplemented:
		return fmt.Errorf("%w (this server takes applies of at most %d bytes: upgrade it, or split the input over several applies)", rpcError(err), api.MaxRequestBytes)
	case codes.DeadlineExceeded:
		return fmt.Errorf("%w (the server may have applied the documents all the same: check with tether get; a large apply may need a longer --timeout)", rpcError(err))
	}
	return rpcError(err)
}

// printApplied prints a line per object for a small apply, else (or when
// the server left lines out) one summary line.
func printApplied(w io.Writer, res *messages.ApplyResponse, docs int) {
	if (len(res.Applied) <= listedLines && res.Omitted == 0) || len(res.Counts) == 0 {
		for _, line := range res.Applied {
			fmt.Fprintln(w, line)
		}
		return
	}
	var parts []string
	for _, c := range res.Counts {
		parts = append(parts, fmt.Sprintf("%d %ss %s", c.Count, c.Kind, c.Verb))
	}
	fmt.Fprintf(w, "%d documents applied: %s\n", docs, strings.Join(parts, ", "))
}

// checkFiles refuses -f lists that cannot mean what they say.
func checkFiles(files []string) error {
	if len(files) == 0 {
		return usageError{fmt.Errorf("apply needs -f FILE")}
	}
	given := map[string]bool{}
	for _, f := range files {
		switch {
		case f == "":
			return usageError{fmt.Errorf("-f \"\": want a file name, or - for stdin")}
		case f == "-" && given[f]:
			return usageError{fmt.Errorf("-f - (stdin) may be given once")}
		case given[filepath.Clean(f)]:
			return usageError{fmt.Errorf("-f %s given twice: give each file once", f)}
		}
		given[filepath.Clean(f)] = true
	}
	return nil
}
