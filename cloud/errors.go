package cloud

import "errors"

// Sentinel errors. Providers wrap them (fmt.Errorf("...: %w", ErrThrottled))
// so that callers can classify any error with errors.Is or Classify.
var (
	ErrRetryable         = errors.New("cloud: retryable error")
	ErrThrottled         = errors.New("cloud: request throttled")
	ErrTerminal          = errors.New("cloud: terminal error")
	ErrAttachedElsewhere = errors.New("cloud: volume attached elsewhere")
	ErrLimitReached      = errors.New("cloud: instance attach limit reached")
	ErrNotFound          = errors.New("cloud: not found")
)

// Kind is the class of a provider error. Callers decide retry policy from
// the kind alone.
type Kind int

const (
	KindNone Kind = iota
	KindRetryable
	KindThrottled
	KindTerminal
	KindAttachedElsewhere
	KindLimitReached
	KindNotFound
)

var kindNames = [...]string{"none", "retryable", "throttled", "terminal", "attached-elsewhere", "limit-reached", "not-found"}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Classify maps an error to its Kind. Unknown errors and context errors are
// retryable: the operation's outcome is unknown, so the caller must treat
// the attachment as uncertain and try again later.
func Classify(err error) Kind {
	switch {
	case err == nil:
		return KindNone
	case errors.Is(err, ErrThrottled):
		return KindThrottled
	case errors.Is(err, ErrAttachedElsewhere):
		return KindAttachedElsewhere
	case errors.Is(err, ErrLimitReached):
		return KindLimitReached
	case errors.Is(err, ErrNotFound):
		return KindNotFound
	case errors.Is(err, ErrTerminal):
		return KindTerminal
	}
	// Context errors and anything unclassified: the outcome is unknown.
	return KindRetryable
}

// Sentinel is the sentinel error Classify maps to k: the way back from a
// kind to an error (fault injection, errors sent over the wire). nil for
// KindNone and kinds it does not know.
func (k Kind) Sentinel() error {
	switch k {
	case KindRetryable:
		return ErrRetryable
	case KindThrottled:
		return ErrThrottled
	case KindTerminal:
		return ErrTerminal
	case KindAttachedElsewhere:
		return ErrAttachedElsewhere
	case KindLimitReached:
		return ErrLimitReached
	case KindNotFound:
		return ErrNotFound
	}
	return nil
}
