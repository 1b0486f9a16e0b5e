// Package process wires a tether process from its configuration: logging,
// the actor system, the cloud, the controller and node agents.
package process
