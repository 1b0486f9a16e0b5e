package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/tether/tether/bootstrap/api"
	"github.com/tether/tether/messages"
)

// maxInputBytes bounds what one tether apply reads, over all its -f files
// together. The server refuses requests over api.MaxRequestBytes, and
// documents encode smaller than the text they are read from, so input
// within this bound makes a request the server takes.
const maxInputBytes = api.MaxRequestBytes

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
			docs, err := readInputs(files, cmd.InOrStdin())
			if err != nil {
				return err
			}
			c, ctx, done, err := cf.open()
			if err != nil {
				return err
			}
			defer done()
			res, err := c.Apply(ctx, &messages.ApplyRequest{Documents: docs})
			if err != nil {
				return rpcError(err)
			}
			for _, line := range res.Applied {
				fmt.Fprintln(cmd.OutOrStdout(), line)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, "file to apply (YAML or JSON; - for stdin); repeat -f to apply several files as one all-or-nothing request")
	cf.register(cmd.Flags())
	return cmd
}

// readInputs reads every file in order (- is stdin, at most once), at most
// maxInputBytes in all, and returns the documents of all of them, or an
// error naming the file and document: never some of them.
func readInputs(files []string, stdin io.Reader) ([]*messages.Document, error) {
	if err := checkFiles(files); err != nil {
		return nil, err
	}
	var all []entry
	left := maxInputBytes
	for _, f := range files {
		name, data, err := readInput(f, stdin, left)
		if err != nil {
			return nil, err
		}
		left -= len(data)
		es, err := parseInput(name, data)
		if err != nil {
			return nil, err
		}
		all = append(all, es...)
	}
	return toDocuments(all)
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

// readInput reads one file (- is stdin), refusing more than limit bytes.
func readInput(file string, stdin io.Reader, limit int) (string, []byte, error) {
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
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > limit {
		if limit == maxInputBytes {
			return "", nil, fmt.Errorf("%s: larger than %d bytes, the bound of one apply (split it over several applies)", name, maxInputBytes)
		}
		return "", nil, fmt.Errorf("%s: the -f files together are larger than %d bytes, the bound of one apply (split them over several applies)", name, maxInputBytes)
	}
	return name, data, nil
}
