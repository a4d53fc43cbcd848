// Package validate checks a flow's JSON input against its input schema, for package
// engine, which turns what it finds into the ValidationError envelope.
//
// A [Validator] is compiled once per flow, when the flow is bound; [Validator.Validate]
// walks a decoded input and returns every issue, each on its field, in path order,
// worded for the caller.
package validate

// Issue is one problem with the input: where (a path such as "items[2].name", empty for
// the input as a whole) and what, worded for the caller.
type Issue struct {
	Path    string
	Message string
}
