package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tether/tether/bootstrap/operator/api"
)

// input is what the -f files of one apply hold: the documents, encoded
// (api.Batch), and where each was read, for errors. Its memory grows with
// the documents, in about the size of their text: neither the text nor
// decoded messages are kept.
type input struct {
	batch api.Batch
	at    sources
	max   int // documents
}

// readInputs reads every file in order (- is stdin, at most once), at
// most maxInputBytes and api.MaxApplyDocuments in all, as streams: the
// bounds are enforced while reading. It returns the documents of all of
// them, or an error naming the file and document: never some of them.
func readInputs(files []string, stdin io.Reader) (*input, error) {
	return readInputsWithin(files, stdin, maxInputBytes, api.MaxApplyDocuments)
}

// readInputsWithin is readInputs reading at most limit bytes and maxDocs
// documents.
func readInputsWithin(files []string, stdin io.Reader, limit, maxDocs int) (*input, error) {
	if err := checkFiles(files); err != nil {
		return nil, err
	}
	in := &input{max: maxDocs}
	left := limit
	for _, f := range files {
		name, r, done, err := openInput(f, stdin)
		if err != nil {
			return nil, err
		}
		br := &boundedReader{r: r, left: left}
		before := in.batch.Len()
		err = decodeInput(name, br, in.add)
		done()
		switch {
		case br.exceeded && left == limit:
			return nil, fmt.Errorf("%s: larger than %d bytes, the bound of one apply (split it over several applies)", name, limit)
		case br.exceeded:
			return nil, fmt.Errorf("%s: the -f files together are larger than %d bytes, the bound of one apply (split them over several applies)", name, limit)
		case err != nil:
			return nil, err
		case in.batch.Len() == before:
			return nil, fmt.Errorf("%s: no documents in input", name)
		}
		left = br.left
	}
	return in, nil
}

// openInput opens one -f file (- is stdin); done closes it.
func openInput(file string, stdin io.Reader) (string, io.Reader, func(), error) {
	if file == "-" {
		return "stdin", stdin, func() {}, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return "", nil, nil, err
	}
	return file, f, func() { f.Close() }, nil
}

// add converts one object and appends it, refusing it (naming where it
// was read) if no document can say it (toDocument), if it is too large
// to send, or if it is one more than the bound. Whether the documents are
// valid, an object named twice included, is the server's to say, once
// (sources.explain names the file and document of what it refuses).
func (in *input) add(e entry) error {
	d, err := toDocument(e.spec)
	if err != nil {
		return fmt.Errorf("%s: %w", e.at, err)
	}
	if in.batch.Len() >= in.max {
		return fmt.Errorf("%s: more than %d documents, the bound of one apply (split them over several applies)", e.at, in.max)
	}
	if err := in.batch.Add(d); err != nil {
		return fmt.Errorf("%s: %s: %w: no message of the API carries it (split its fields over several objects, or shorten them)", e.at, documentKey(d), err)
	}
	in.at.add(e.at)
	return nil
}

// boundedReader reads at most left bytes; past them it fails, and says so.
type boundedReader struct {
	r        io.Reader
	left     int
	exceeded bool
}

var errBound = errors.New("input bound exceeded")

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a bound reached from a bound exceeded.
		var one [1]byte
		if n, _ := b.r.Read(one[:]); n > 0 {
			b.exceeded = true
			return 0, errBound
		}
		return 0, io.EOF
	}
	n, err := b.r.Read(p[:min(len(p), b.left)])
	b.left -= n
	return n, err
}
