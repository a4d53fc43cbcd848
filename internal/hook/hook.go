// Package hook is where package engine leaves the door to its internals for the
// module's own extension packages, which open it through package internal/ext. It
// imports nothing, so that engine can import it; no other package should.
package hook

// Engine is set once, by package engine's initialisation, to a value of an unexported
// engine type whose methods are the internals; internal/ext asserts it to its own
// interface of them when it is initialised, so a mismatch fails at start-up, not at a
// call.
var Engine any
