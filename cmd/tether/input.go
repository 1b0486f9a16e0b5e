package main

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"

	"github.com/tether/tether/bootstrap/operator/api"
)

// input is what the -f files of one apply hold: the documents, encoded
// (api.Batch), and where each was read, for errors. Its memory grows with
// the documents, in about the size of their text: neither the text nor
// decoded messages are kept.
type input struct {
	batch api.Batch
	at    sourceIndex
	// seen maps a hash of each object's kind/name to its document's
	// index: one apply may name an object once. A hash found again is
	// checked against the document it names (api.Batch.Document); exact
	// holds the keys whose hash another key has.
	seen  map[uint64]int32
	exact map[string]int32
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
	in := &input{seen: map[uint64]int32{}, max: maxDocs}
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
// was read) if it is invalid, named before, too large to send, or one
// more than the bound.
func (in *input) add(e entry) error {
	d, kind, err := toDocument(e.spec)
	if err != nil {
		return fmt.Errorf("%s: %w", e.at, err)
	}
	if in.batch.Len() >= in.max {
		return fmt.Errorf("%s: more than %d documents, the bound of one apply (split them over several applies)", e.at, in.max)
	}
	key := kind + "/" + e.spec.Name
	if first, dup := in.find(key); dup {
		return fmt.Errorf("%s: %s is also %s: one apply may name an object once", e.at, key, in.at.lookup(int(first)))
	}
	if err := in.batch.Add(d); err != nil {
		return fmt.Errorf("%s: %s: %w: no message of the API carries it (split its fields over several objects, or shorten them)", e.at, key, err)
	}
	in.at.add(e.at)
	return nil
}

// find returns the index of the document named key, if any, and else
// records key as the next document's.
func (in *input) find(key string) (int32, bool) {
	next := int32(in.batch.Len())
	if i, ok := in.exact[key]; ok {
		return i, true
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	sum := h.Sum64()
	i, ok := in.seen[sum]
	if !ok {
		in.seen[sum] = next
		return 0, false
	}
	if d, err := in.batch.Document(int(i)); err == nil && documentKey(d) == key {
		return i, true
	}
	if in.exact == nil {
		in.exact = map[string]int32{}
	}
	in.exact[key] = next // another key's hash: keep this one exactly
	return 0, false
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

// sourceIndex records where each document was read, in runs of
// consecutive documents (or items of one list) of one file: a file of a
// million documents is one run.
type sourceIndex struct{ runs []sourceRun }

type sourceRun struct {
	first     int // the index of its first document
	file      string
	doc, item int // of its first document; item 0: documents doc, doc+1, ...
	n         int
}

func (x *sourceIndex) add(s source) {
	if k := len(x.runs) - 1; k >= 0 {
		r := &x.runs[k]
		if r.file == s.file && ((r.item == 0 && s.item == 0 && s.doc == r.doc+r.n) || (r.item > 0 && s.doc == r.doc && s.item == r.item+r.n)) {
			r.n++
			return
		}
	}
	first := 0
	if k := len(x.runs) - 1; k >= 0 {
		first = x.runs[k].first + x.runs[k].n
	}
	x.runs = append(x.runs, sourceRun{first: first, file: s.file, doc: s.doc, item: s.item, n: 1})
}

// lookup returns where document i (from 0) was read (its line or offset
// is not kept).
func (x *sourceIndex) lookup(i int) source {
	k := sort.Search(len(x.runs), func(k int) bool { return x.runs[k].first > i }) - 1
	if k < 0 {
		return source{file: "?", doc: i + 1}
	}
	r := x.runs[k]
	if r.item == 0 {
		return source{file: r.file, doc: r.doc + i - r.first}
	}
	return source{file: r.file, doc: r.doc, item: r.item + i - r.first}
}

// count returns the number of documents recorded.
func (x *sourceIndex) count() int {
	if len(x.runs) == 0 {
		return 0
	}
	r := x.runs[len(x.runs)-1]
	return r.first + r.n
}

var serverDocument = regexp.MustCompile(`\bdocument (\d+)\b`)

// placeDocument rewrites the server's "document N" (N counted over every
// file of the apply) in msg as the file and the document's number within
// it.
func (x *sourceIndex) placeDocument(msg string) string {
	m := serverDocument.FindStringSubmatchIndex(msg)
	if m == nil {
		return msg
	}
	n, err := strconv.Atoi(msg[m[2]:m[3]])
	if err != nil || n < 1 || n > x.count() {
		return msg
	}
	return msg[:m[0]] + x.lookup(n-1).String() + msg[m[1]:]
}
