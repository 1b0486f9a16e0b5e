package main

import (
	"regexp"
	"strconv"
)

// sources are where the documents of one apply were read, in the order
// sent: the server numbers them so, from 1, across every -f file.
type sources []source

// documentRef is how the server names a document of an apply in its
// errors ("document 12: ...").
var documentRef = regexp.MustCompile(`\bdocument (\d+)\b`)

// explain rewrites, in the server's refusal of an apply, each document
// it names as the file and the place it was read ("document 12" becomes
// "b.yaml: document 3 (line 9)"): the server validates an apply, once,
// and the client says where to look.
func (at sources) explain(err error) error {
	if err == nil {
		return nil
	}
	named := documentRef.ReplaceAllStringFunc(err.Error(), func(ref string) string {
		n, convErr := strconv.Atoi(documentRef.FindStringSubmatch(ref)[1])
		if convErr != nil || n < 1 || n > len(at) {
			return ref
		}
		return at[n-1].String()
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
