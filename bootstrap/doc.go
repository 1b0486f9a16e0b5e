// Package bootstrap holds no code: it is the house of what starts, operates
// and verifies tether, in three rooms.
//
//   - process: wiring a tether process (the embedded `tether up`, the
//     cloud service, a distributed member or agent), and under it
//     distributed (etcd membership, members, agents) and remoting
//     (Proto.Actor remote over mutual TLS).
//   - operator: the operator's surface, the API server and client (api)
//     and certificate issuing (certs).
//   - verify: the harnesses that prove the system, the deterministic
//     simulation, chaos, bench, demo, and their helpers (journal,
//     datatest).
//
// See docs/design.md#layering for the rules these rooms keep.
package bootstrap
