// Package distributed wires tether's distributed mode: controller members
// that form a Proto.Actor cluster with membership and the store on etcd
// (`tether controller`), node agents in their own processes that talk to
// the cluster over Proto.Actor remote (`tether agent`), and one cloud
// shared over gRPC (`tether cloud serve`, process.ServeCloud).
//
// The actors are the embedded mode's (actors/controller, node/agent): only
// how names resolve (virtual actors instead of local spawns) and where
// the store and the cloud live differ.
//
// See docs/distributed.md#how-it-holds-together.
package distributed
