package controller

import (
	"context"

	"github.com/tether/tether/actors/events"
)

// ListEvents lists events, oldest first: from the durable log the
// recorder persists to (every member's and agent's), else from this
// process's memory. The cursor is for WatchEvents.
func (c *Controller) ListEvents(ctx context.Context, q events.Query) ([]events.Event, uint64, error) {
	return c.env.events.List(ctx, q)
}

// WatchEvents calls fn for each event appended to the durable log after
// cursor, until ctx ends.
func (c *Controller) WatchEvents(ctx context.Context, q events.Query, cursor uint64, fn func(events.Event)) error {
	return c.env.events.Watch(ctx, q, cursor, fn)
}
