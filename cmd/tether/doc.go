// Command tether attaches cloud volumes to nodes and keeps them where the
// workloads want them. `tether up` runs the whole system in one process;
// `tether controller`, `agent` and `cloud serve` run it distributed;
// `apply`, `get`, `describe`, `delete` and `node` talk to its API;
// `certs` makes its TLS files; `demo`, `chaos` and `bench` run the
// harnesses. The command parses flags and wires packages: every decision
// lives in them. A usage error exits 2.
//
// See README.md, docs/operating.md and docs/distributed.md.
package main
