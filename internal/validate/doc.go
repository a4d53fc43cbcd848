// Package validate checks a flow's JSON input against its input schema, for package
// engine, which turns what it finds into the ValidationError envelope.
//
// A [Validator] is compiled once per flow, when the flow is bound, and has two ways in:
//
//   - [Validator.Accepts] reads the raw bytes once, along the schema, without building
//     anything, and says yes only when the input is one JSON value that certainly meets
//     the schema. The caller then decodes the bytes once, straight into the flow's Go
//     type: for the common input (valid, with the keywords a Go type's schema has) that
//     is all the work validation adds.
//   - [Validator.Validate] walks a decoded value and returns every issue, each on its
//     field, in path order, worded for the caller. It is the reference: Accepts says yes
//     only where Validate finds nothing, and no to anything it cannot decide (keywords it
//     does not read, a member given twice), so that Validate has the last word.
package validate

// Issue is one problem with the input: where (a path such as "items[2].name", empty for
// the input as a whole) and what, worded for the caller.
type Issue struct {
	Path    string
	Message string
}
