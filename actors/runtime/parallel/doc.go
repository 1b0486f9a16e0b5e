// Package parallel runs independent calls a few at a time: where each is a
// round trip to another process (an identity resolved through the
// cluster, a lookup in a remote cloud or store), doing them one after the
// other costs their sum.
//
// See docs/performance.md#across-processes-tether-bench---distributed.
package parallel
