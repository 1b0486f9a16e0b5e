package controller

import "errors"

// Validated is a batch of changes that Validate accepted, and the store
// revision it was checked against: what Commit takes.
type Validated struct {
	changes []Change
	rev     uint64
	ok      bool
}

// Validations counts the batches this controller validated: one per
// ApplyAll or Validate, and one more per Commit that an apply or delete
// raced (a caller that counts them sees an apply validated once).
func (c *Controller) Validations() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.validations
}

// errNotValidated: Commit was given a Validated that Validate did not make.
var errNotValidated = errors.New("controller: commit of a batch that Validate did not accept")

// Validate is ApplyAll without writing anything (a dry run): the error
// ApplyAll would return now, or nil and the batch for Commit. A caller
// with work to do between the two (the API provisions the cloud) calls
// Validate, then Commit: together they validate the batch once.
func (c *Controller) Validate(changes []Change) (Validated, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rev, err := c.env.store.Revision() // before the reads it stands for
	if err != nil {
		return Validated{}, err
	}
	r, err := c.reader(len(changes))
	if err != nil {
		return Validated{}, err
	}
	if err := c.validate(r, changes); err != nil {
		return Validated{}, err
	}
	for _, ch := range changes {
		if _, err := verb(r, ch); err != nil {
			return Validated{}, err
		}
	}
	return Validated{changes: changes, rev: rev, ok: true}, nil
}

// Commit writes a batch that Validate accepted, as ApplyAll does. It
// validates it again only if the desired state changed since (the store's
// revision moved: an apply or a delete came between), so that what it
// writes is valid against what it writes over; else the batch is written
// as validated.
func (c *Controller) Commit(v Validated) ([]string, error) {
	if !v.ok {
		return nil, errNotValidated
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rev, err := c.env.store.Revision()
	if err != nil {
		return nil, err
	}
	r, err := c.reader(len(v.changes))
	if err != nil {
		return nil, err
	}
	if rev != v.rev {
		if err := c.validate(r, v.changes); err != nil {
			return nil, err
		}
	}
	return c.commit(r, v.changes)
}
