// Package testkit holds the module's one bounded wait for tests: poll a
// condition until it holds, failing the test with the caller's message
// once a deadline passes. A sleep never stands in for synchronization; a
// deadline stands in only for "never". It imports nothing of tether's, so
// every test package may use it without breaking the layering; only tests
// import it.
//
// See CONTRIBUTING.md#tests.
package testkit
