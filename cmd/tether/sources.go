package main

import (
	"regexp"
	"sort"
	"strconv"
)

// sources are where the documents of one apply were read, in the order
// sent: the server numbers them so, from 1, across every -f file. They
// are kept in runs of consecutive documents (or items of one list) of one
// file, with each document's line or offset: a file of a million
// documents is one run and a number per document.
type sources struct {
	runs []sourceRun
	pos  []uint32 // each document's line or offset, plus 1 (0: none)
}

type sourceRun struct {
	first     int // the index of its first document
	file      string
	unit      string // of its documents' positions: line, offset or none
	doc, item int    // of its first document; item 0: documents doc, doc+1, ...
	n         int
}

// add records where the next document was read.
func (at *sources) add(s source) {
	p := uint32(0)
	if s.unit != "" {
		p = uint32(s.pos) + 1
	}
	at.pos = append(at.pos, p)
	if k := len(at.runs) - 1; k >= 0 {
		r := &at.runs[k]
		if r.file == s.file && r.unit == s.unit && ((r.item == 0 && s.item == 0 && s.doc == r.doc+r.n) || (r.item > 0 && s.doc == r.doc && s.item == r.item+r.n)) {
			r.n++
			return
		}
	}
	first := 0
	if k := len(at.runs) - 1; k >= 0 {
		first = at.runs[k].first + at.runs[k].n
	}
	at.runs = append(at.runs, sourceRun{first: first, file: s.file, unit: s.unit, doc: s.doc, item: s.item, n: 1})
}

// count returns the number of documents recorded.
func (at *sources) count() int { return len(at.pos) }

// lookup returns where document i (from 0) was read.
func (at *sources) lookup(i int) source {
	k := sort.Search(len(at.runs), func(k int) bool { return at.runs[k].first > i }) - 1
	r := at.runs[k]
	s := source{file: r.file, doc: r.doc + i - r.first}
	if r.item > 0 {
		s.doc, s.item = r.doc, r.item+i-r.first
	}
	if p := at.pos[i]; p > 0 {
		s.unit, s.pos = r.unit, int(p-1)
	}
	return s
}

// documentRef is how the server names a document of an apply in its
// errors ("document 12: ...").
var documentRef = regexp.MustCompile(`\bdocument (\d+)\b`)

// explain rewrites, in the server's refusal of an apply, each document
// it names as the file and the place it was read ("document 12" becomes
// "b.yaml: document 3 (line 9)"): the server validates an apply, once,
// and the client says where to look.
func (at *sources) explain(err error) error {
	if err == nil {
		return nil
	}
	named := documentRef.ReplaceAllStringFunc(err.Error(), func(ref string) string {
		n, convErr := strconv.Atoi(documentRef.FindStringSubmatch(ref)[1])
		if convErr != nil || n < 1 || n > at.count() {
			return ref
		}
		return at.lookup(n - 1).String()
	})
	if named == err.Error() {
		return err
	}
	return explained{msg: named, err: err}
}

// explained is an error with its documents named, wrapping the original
// (for errors.Is and errors.As).
type explained struct {
	msg string
	err error
}

func (e explained) Error() string { return e.msg }
func (e explained) Unwrap() error { return e.err }
