// Package process wires a tether process from its configuration: logging,
// the actor system, the cloud, the controller and node agents (the
// embedded `tether up`), and the shared cloud service (ServeCloud). It
// holds wiring only: what the process decides lives in the packages it
// wires.
//
// See docs/operating.md#tether-up-running-tether.
package process
