package store

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Fenced writes of many actors at once (node statuses, intents, claims)
// share transactions, as bbolt's Batch shares its commits: one
// transaction of them is in flight at a time; a write that finds none
// goes at once, writes that come meanwhile wait for it and then go
// together, in one transaction whose compares are all of theirs. Every
// compare is a key's ModRevision (a fence, the status read), and the
// transaction's else branch reads those keys: if any compare fails,
// nothing of the group is written, the writes whose keys moved get their
// answer (fenced, or read again), and the others go again in the next
// group. So a quiet store adds no delay, a busy one sends a transaction
// per round trip instead of one per write, and no write's answer depends
// on the others of its group.

// modCheck is a compare: key's ModRevision is mod (0: the key is missing).
type modCheck struct {
	key string
	mod int64
}

// groupWrite is one write waiting for a shared transaction.
type groupWrite struct {
	checks []modCheck
	then   []clientv3.Op
	keys   map[string]bool // the keys then writes: no two writes of a group share one
	size   int             // about its bytes

	done chan struct{}
	res  groupResult
}

// groupResult is a write's answer: committed at rev, or not (a check
// failed: now holds every checked key's ModRevision as the transaction
// read it), or err (outcome unknown).
type groupResult struct {
	rev int64
	ok  bool
	now map[string]int64
	err error
}

// committer queues the writes for shared transactions.
type committer struct {
	e *Etcd

	mu      sync.Mutex
	queue   []*groupWrite
	running bool
}

// commit commits w, with the writes that wait with it.
func (c *committer) commit(ctx context.Context, checks []modCheck, then []clientv3.Op) groupResult {
	w := &groupWrite{checks: checks, then: then, keys: map[string]bool{}, done: make(chan struct{})}
	for _, op := range then {
		w.keys[string(op.KeyBytes())] = true
		w.size += len(op.KeyBytes()) + len(op.ValueBytes()) + 16
	}
	c.mu.Lock()
	c.queue = append(c.queue, w)
	if !c.running {
		c.running = true
		go c.run()
	}
	c.mu.Unlock()
	select {
	case <-w.done:
		return w.res
	case <-ctx.Done():
		// It may still commit: as a write whose answer was lost.
		return groupResult{err: ctx.Err()}
	}
}

// run commits the queue, a group at a time, until it is empty.
func (c *committer) run() {
	for {
		c.mu.Lock()
		group := c.takeLocked()
		if len(group) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if retry := c.commitGroup(group); len(retry) > 0 {
			c.mu.Lock()
			c.queue = append(retry, c.queue...)
			c.mu.Unlock()
		}
	}
}

// takeLocked takes the writes of the next group from the queue: in order,
// as many as fit one transaction, skipping (for the next group) a write
// with a key of one already taken.
func (c *committer) takeLocked() []*groupWrite {
	cfg := c.e.cfg
	var group, rest []*groupWrite
	keys := map[string]bool{}
	checks, ops, size := 0, 1, 0 // ops: meta/last's put
	for i, w := range c.queue {
		fits := checks+len(w.checks) <= cfg.MaxTxnOps && ops+len(w.then) <= cfg.MaxTxnOps && size+w.size <= cfg.MaxRequestBytes/2
		if !fits && len(group) > 0 {
			rest = append(rest, c.queue[i:]...)
			break
		}
		clash := false
		for k := range w.keys {
			clash = clash || keys[k]
		}
		if clash {
			rest = append(rest, w)
			continue
		}
		for k := range w.keys {
			keys[k] = true
		}
		group = append(group, w)
		checks, ops, size = checks+len(w.checks), ops+len(w.then), size+w.size
	}
	c.queue = rest
	return group
}

// commitGroup commits group in one transaction and answers its writes;
// it returns those to go again (their checks held, another's did not).
func (c *committer) commitGroup(group []*groupWrite) (again []*groupWrite) {
	var cmps []clientv3.Cmp
	var then, orElse []clientv3.Op
	for _, w := range group {
		for _, ch := range w.checks {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(ch.key), "=", ch.mod))
			orElse = append(orElse, clientv3.OpGet(ch.key, clientv3.WithKeysOnly()))
		}
		then = append(then, w.then...)
	}
	ctx, cancel := c.e.ctx()
	defer cancel()
	resp, err := c.e.c.Txn(ctx).If(cmps...).Then(append(then, c.e.putLast())...).Else(orElse...).Commit()
	if err != nil {
		answer(group, groupResult{err: c.e.ioError("commit", c.e.cfg.Timeout, err)})
		return nil
	}
	if resp.Succeeded {
		if len(group) > 1 {
			c.e.groups.Add(1)
			c.e.grouped.Add(uint64(len(group)))
		}
		c.e.wrote(resp.Header.Revision)
		answer(group, groupResult{rev: resp.Header.Revision, ok: true})
		return nil
	}
	i := 0
	for _, w := range group {
		now := map[string]int64{}
		held := true
		for _, ch := range w.checks {
			var mod int64
			if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
				mod = kvs[0].ModRevision
			}
			now[ch.key] = mod
			held = held && mod == ch.mod
			i++
		}
		if held {
			again = append(again, w)
		} else {
			answer([]*groupWrite{w}, groupResult{now: now})
		}
	}
	return again
}

func answer(group []*groupWrite, res groupResult) {
	for _, w := range group {
		w.res = res
		close(w.done)
	}
}
