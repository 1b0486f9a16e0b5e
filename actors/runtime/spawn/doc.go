// Package spawn guards named actors against a race in Proto.Actor:
// SpawnNamed makes a name resolvable before it has initialised the actor's
// mailbox, and a message sent to that name in between dereferences a nil
// dispatcher (a panic in the sender). Every spawn of a named actor holds
// the Guard's lock of that name for writing and every send, request, stop
// or poison holds the lock of its target's name for reading, so no message
// can reach a half-built mailbox. The locks are sharded by name: the race
// is between a spawn and a send to the same name, and one lock for the
// whole system made every send of a fleet wait behind every spawn. A
// Guard never spawns or sends on its own; one Guard serves a whole actor
// system.
package spawn
