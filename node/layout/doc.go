// Package layout owns the node agent's paths on disk: which names may become
// path components, and where a workload's volume and a node's global
// (staging) mount live under the data directory, following Kubernetes'
// layout:
//
//	<root>/pods/<workload-uid>/volumes/<plugin>/<volume>   (publish)
//	<root>/plugins/<plugin>/mounts/<volume>                (stage)
//
// Every name is validated before any path is built, and every path is
// checked to be inside the root, so a hostile or mistaken name can never
// point outside the data directory.
//
// Layout never touches the filesystem: it does not create, read, resolve or
// remove anything. Paths are computed lexically; whether a component on
// disk is a symlink is the business of the code that creates and removes
// (package mount).
package layout
