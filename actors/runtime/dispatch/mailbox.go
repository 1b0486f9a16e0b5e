package dispatch

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// Mailbox returns a producer of lean unbounded mailboxes, for
// actor.WithMailbox.
//
// Such a mailbox behaves exactly as Proto.Actor's default (actor.Unbounded):
// system messages before user messages; SuspendMailbox holds the user
// messages until ResumeMailbox; at most the dispatcher's Throughput
// messages between two runtime.Gosched; the same idle/running hand-off,
// re-checked after going idle so that no post is left unprocessed; a
// MessageBatch (bare or in a MessageEnvelope) posted as its messages and
// then itself; a panic in the invoker passed to its EscalateFailure; and the
// same calls to the MailboxMiddlewares.
//
// What differs is what it costs. Proto.Actor's default allocates, for every
// actor and for its whole life, two queues (an mpsc queue with its stub
// node, a ring of 10 slots with its lock): a few hundred bytes per actor,
// although a mailbox is nearly always empty. Here both queues are a pair of
// nil pointers while empty: a queue takes fixed-size segments from a
// sync.Pool while messages wait, and gives each back as soon as it is
// drained. The mailbox itself is 96 bytes.
//
// One more difference: a nil user message, which Proto.Actor's default
// cannot tell from an empty queue (its run then loops without end), is
// delivered here as any other.
func Mailbox(opts ...MailboxOption) actor.MailboxProducer {
	cfg := &mailboxConfig{}
	for _, o := range opts {
		o(cfg)
	}
	return func() actor.Mailbox { return &mailbox{cfg: cfg} }
}

// MailboxOption configures the mailboxes of a Mailbox producer.
type MailboxOption func(*mailboxConfig)

// CountReceived makes the mailboxes add one to n for every user message
// they hand to their actor (system messages, including Started, are not
// counted; a message whose handling panics is). The count is the mailbox's:
// it needs no receiver middleware, which would make Proto.Actor give every
// actor its "extras" and wrap every message in an envelope.
func CountReceived(n *atomic.Int64) MailboxOption {
	return func(c *mailboxConfig) { c.received = n }
}

// Middlewares makes the mailboxes call ms as actor.Unbounded(ms...) would.
func Middlewares(ms ...actor.MailboxMiddleware) MailboxOption {
	return func(c *mailboxConfig) { c.middlewares = append(c.middlewares, ms...) }
}

// mailboxConfig is shared by all the mailboxes of one producer, so that
// each pays a pointer for its options.
type mailboxConfig struct {
	received    *atomic.Int64
	middlewares []actor.MailboxMiddleware
}

const (
	mailboxIdle int32 = iota
	mailboxRunning
)

// mailbox is Proto.Actor's defaultMailbox with two lean queues under one
// lock. The counters and flags are its own, used as it uses them.
type mailbox struct {
	mu     sync.Mutex // guards system and user
	system fifo
	user   fifo

	schedulerStatus atomic.Int32
	userMessages    atomic.Int32
	sysMessages     atomic.Int32
	suspended       atomic.Int32

	invoker    actor.MessageInvoker
	dispatcher actor.Dispatcher
	cfg        *mailboxConfig
}

var _ actor.Mailbox = (*mailbox)(nil)

// PostUserMessage implements actor.Mailbox, as defaultMailbox does: a batch,
// bare or as the message of an envelope, is posted message by message and
// then posted itself.
func (m *mailbox) PostUserMessage(message any) {
	if batch, ok := message.(actor.MessageBatch); ok {
		for _, msg := range batch.GetMessages() {
			m.PostUserMessage(msg)
		}
	}
	if env, ok := message.(*actor.MessageEnvelope); ok {
		if batch, ok := env.Message.(actor.MessageBatch); ok {
			for _, msg := range batch.GetMessages() {
				m.PostUserMessage(msg)
			}
		}
	}

	for _, ms := range m.cfg.middlewares {
		ms.MessagePosted(message)
	}
	m.mu.Lock()
	m.user.push(message)
	m.mu.Unlock()
	m.userMessages.Add(1)
	m.schedule()
}

// PostSystemMessage implements actor.Mailbox.
func (m *mailbox) PostSystemMessage(message any) {
	for _, ms := range m.cfg.middlewares {
		ms.MessagePosted(message)
	}
	m.mu.Lock()
	m.system.push(message)
	m.mu.Unlock()
	m.sysMessages.Add(1)
	m.schedule()
}

// RegisterHandlers implements actor.Mailbox.
func (m *mailbox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.invoker = invoker
	m.dispatcher = dispatcher
}

// Start implements actor.Mailbox.
func (m *mailbox) Start() {
	for _, ms := range m.cfg.middlewares {
		ms.MailboxStarted()
	}
}

// UserMessageCount implements actor.Mailbox.
func (m *mailbox) UserMessageCount() int { return int(m.userMessages.Load()) }

func (m *mailbox) schedule() {
	if m.schedulerStatus.CompareAndSwap(mailboxIdle, mailboxRunning) {
		m.dispatcher.Schedule(m.processMessages)
	}
}

// processMessages runs until both queues are empty (or the user one is held
// by a suspension), then goes idle. A post whose count it did not see
// before going idle finds it idle and schedules it again; one whose count
// it did see makes it take itself back to running, unless that post's
// schedule already did.
func (m *mailbox) processMessages() {
process:
	m.run()

	m.schedulerStatus.Store(mailboxIdle)
	sys := m.sysMessages.Load()
	user := m.userMessages.Load()
	if sys > 0 || (m.suspended.Load() == 0 && user > 0) {
		if m.schedulerStatus.CompareAndSwap(mailboxIdle, mailboxRunning) {
			goto process
		}
	}

	if user == 0 && m.suspended.Load() == 0 {
		for _, ms := range m.cfg.middlewares {
			ms.MailboxEmpty()
		}
	}
}

func (m *mailbox) run() {
	var (
		msg any // for EscalateFailure
		ok  bool
	)

	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
		}
	}()

	i, t := 0, m.dispatcher.Throughput()
	for {
		if i > t {
			i = 0
			runtime.Gosched()
		}

		i++

		// System messages first, until there are none. A message whose
		// count is not yet seen is not yet posted: the poster's schedule,
		// or the re-check in processMessages, will see it.
		if m.sysMessages.Load() > 0 {
			m.mu.Lock()
			msg, ok = m.system.pop()
			m.mu.Unlock()
		} else {
			msg, ok = nil, false
		}
		if ok {
			m.sysMessages.Add(-1)
			switch msg.(type) {
			case *actor.SuspendMailbox:
				m.suspended.Store(1)
			case *actor.ResumeMailbox:
				m.suspended.Store(0)
			default:
				m.invoker.InvokeSystemMessage(msg)
			}
			for _, ms := range m.cfg.middlewares {
				ms.MessageReceived(msg)
			}
			continue
		}

		// No system message: stop here while suspended.
		if m.suspended.Load() == 1 {
			return
		}

		if m.userMessages.Load() == 0 {
			return
		}
		m.mu.Lock()
		msg, ok = m.user.pop()
		m.mu.Unlock()
		if !ok {
			return
		}
		m.userMessages.Add(-1)
		if n := m.cfg.received; n != nil {
			n.Add(1)
		}
		m.invoker.InvokeUserMessage(msg)
		for _, ms := range m.cfg.middlewares {
			ms.MessageReceived(msg)
		}
	}
}

// segmentLen makes a segment 256 bytes: 15 interfaces, two indexes and a
// pointer.
const segmentLen = 15

// segment is a piece of a fifo: messages [head, tail) wait in items.
type segment struct {
	items      [segmentLen]any
	head, tail int32
	next       *segment
}

var segments = sync.Pool{New: func() any { return new(segment) }}

// fifo is an unbounded queue of segments, nil while empty: a segment is
// taken from the pool when a push finds no room and given back as soon as
// it is drained. Not safe for concurrent use.
type fifo struct {
	first, last *segment
}

func (q *fifo) push(v any) {
	s := q.last
	if s == nil || s.tail == segmentLen {
		n := segments.Get().(*segment)
		if s == nil {
			q.first = n
		} else {
			s.next = n
		}
		q.last, s = n, n
	}
	s.items[s.tail] = v
	s.tail++
}

func (q *fifo) pop() (any, bool) {
	s := q.first
	if s == nil {
		return nil, false
	}
	v := s.items[s.head]
	s.items[s.head] = nil
	s.head++
	if s.head == s.tail { // drained: either the queue's end, or full and followed by next
		q.first = s.next
		if q.first == nil {
			q.last = nil
		}
		s.head, s.tail, s.next = 0, 0, nil // its items are nil: all popped
		segments.Put(s)
	}
	return v, true
}
