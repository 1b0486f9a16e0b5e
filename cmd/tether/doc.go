// Command tether attaches cloud volumes to nodes and keeps them where the
// workloads want them. See README.md.
package main
