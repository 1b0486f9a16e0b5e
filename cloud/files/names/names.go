package names

import (
	"errors"
	"fmt"
)

// Kinds of names, used in error messages.
const (
	KindVolume   = "volume ID"
	KindWorkload = "workload UID"
	KindNode     = "node name"
	KindPlugin   = "plugin name"
)

// MaxNameLen is the longest name ValidName accepts, in bytes.
const MaxNameLen = 128

// quoteLen is how many bytes of a bad name an error message quotes.
const quoteLen = 64

// ErrInvalidName is wrapped by every error of ValidName.
var ErrInvalidName = errors.New("names: invalid name")

// NameError says which name is invalid and why. It wraps ErrInvalidName.
type NameError struct {
	Kind   string // one of the Kind constants
	Name   string // the refused value, untruncated
	Reason string
}

func (e *NameError) Error() string {
	q := fmt.Sprintf("%q", e.Name)
	if len(e.Name) > quoteLen {
		q = fmt.Sprintf("%q...", e.Name[:quoteLen])
	}
	return fmt.Sprintf("names: invalid %s %s: %s", e.Kind, q, e.Reason)
}

func (e *NameError) Unwrap() error { return ErrInvalidName }

// ValidName checks one name that will become one path component: 1 to
// MaxNameLen bytes of [A-Za-z0-9._-], starting with a letter or digit. So
// ".", "..", "-x", separators, NUL, spaces and non-ASCII are all refused.
// The error is a *NameError (wrapping ErrInvalidName) naming kind.
func ValidName(kind, name string) error {
	bad := func(reason string) error { return &NameError{Kind: kind, Name: name, Reason: reason} }
	switch {
	case name == "":
		return bad("must not be empty")
	case len(name) > MaxNameLen:
		return bad(fmt.Sprintf("is %d bytes long, at most %d are allowed", len(name), MaxNameLen))
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return bad("only letters, digits, '.', '_' and '-' are allowed")
		}
	}
	if !alnum(name[0]) {
		return bad("must start with a letter or digit")
	}
	return nil
}

func alnum(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

func nameByte(b byte) bool {
	return alnum(b) || b == '.' || b == '_' || b == '-'
}
