package main

import (
	"fmt"
	"io"
	"os"
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
			docs, at, err := readInputs(files, cmd.InOrStdin())
			if err != nil {
				return err
			}
			c, ctx, done, err := cf.open()
			if err != nil {
				return err
			}
			defer done()
			res, err := api.Send(ctx, c, docs)
			if err != nil {
				return at.explain(applyError(err))
			}
			printApplied(cmd.OutOrStdout(), res, len(docs))
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

// readInputs reads every file in order (- is stdin, at most once), at most
// maxInputBytes in all, and returns the documents of all of them, or an
// error naming the file and document: never some of them. It refuses more
// documents than the server takes in one apply. It returns where each
// document was read, for the server's errors.
func readInputs(files []string, stdin io.Reader) ([]*messages.Document, sources, error) {
	return readInputsWithin(files, stdin, maxInputBytes)
}

// readInputsWithin is readInputs reading at most limit bytes.
func readInputsWithin(files []string, stdin io.Reader, limit int) ([]*messages.Document, sources, error) {
	if err := checkFiles(files); err != nil {
		return nil, nil, err
	}
	var all []entry
	left := limit
	for _, f := range files {
		name, data, err := readInput(f, stdin, left, limit)
		if err != nil {
			return nil, nil, err
		}
		left -= len(data)
		es, err := parseInput(name, data)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, es...)
		if len(all) > api.MaxApplyDocuments {
			return nil, nil, fmt.Errorf("%s: the -f files hold more than %d documents, the bound of one apply (split them over several applies)", name, api.MaxApplyDocuments)
		}
	}
	docs, err := toDocuments(all)
	if err != nil {
		return nil, nil, err
	}
	at := make(sources, len(all))
	for i, e := range all {
		at[i] = e.at
	}
	return docs, at, nil
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

// readInput reads one file (- is stdin), refusing more than left bytes of
// the limit of all files together.
func readInput(file string, stdin io.Reader, left, limit int) (string, []byte, error) {
	name, r := file, stdin
	if file == "-" {
		name = "stdin"
	} else {
		f, err := os.Open(file)
		if err != nil {
			return "", nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(left)+1))
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > left {
		if left == limit {
			return "", nil, fmt.Errorf("%s: larger than %d bytes, the bound of one apply (split it over several applies)", name, limit)
		}
		return "", nil, fmt.Errorf("%s: the -f files together are larger than %d bytes, the bound of one apply (split them over several applies)", name, limit)
	}
	return name, data, nil
}
