// Package spawn guards named actors against a race in Proto.Actor:
// SpawnNamed makes a name resolvable before it has initialised the actor's
// mailbox, and a message sent to that name in between dereferences a nil
// dispatcher (a panic in the sender). With a Guard no message reaches a
// half-built mailbox. A Guard never spawns or sends on its own; one Guard
// serves a whole actor system.
//
// See docs/design.md#how-the-pieces-fit.
package spawn
