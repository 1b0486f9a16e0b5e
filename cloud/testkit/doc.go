// Package testkit holds the module's one bounded wait for tests: poll a
// condition until it holds, failing the test with the caller's message
// once a deadline passes. A sleep never stands in for synchronization;
// a deadline stands in only for "never".
//
// It lives at the bottom of the tree (under cloud/, importing nothing of
// tether's) so that every test package may import it without breaking
// the layering; it is imported by tests only.
package testkit
