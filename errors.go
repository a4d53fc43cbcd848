package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
)

// The framework codes: a closed set that any flow may answer with, besides its declared
// codes. [StatusOf] is the one place that maps them to HTTP statuses.
const (
	CodeNotFound         = "NotFound"
	CodeValidation       = "ValidationError"
	CodeMethodNotAllowed = "MethodNotAllowed"
	CodePayloadTooLarge  = "PayloadTooLarge"
	CodeInternal         = "InternalError"
	CodeUnauthorized     = "Unauthorized"
	CodeForbidden        = "Forbidden"
	CodeRateLimited      = "RateLimited"
	CodeConflict         = "Conflict"
	CodeJournalLeaseBusy = "JournalLeaseBusy"
	// CodeRequestTimeout: the request's body did not arrive within the body deadline.
	CodeRequestTimeout = "RequestTimeout"
	// CodeUnavailable: the server is at capacity for this kind of call (for example
	// password hashing); retry after the Retry-After header.
	CodeUnavailable = "Unavailable"
	// CodeTransportError is produced only by the client, for transport and protocol
	// trouble; a server never answers with it.
	CodeTransportError = "TransportError"
	// CodeIncompletePath is produced only by the client when a call names a unit but
	// no flow; no request is sent.
	CodeIncompletePath = "IncompletePath"
)

var frameworkStatus = map[string]int{
	CodeNotFound:         http.StatusNotFound,
	CodeValidation:       http.StatusBadRequest,
	CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	CodePayloadTooLarge:  http.StatusRequestEntityTooLarge,
	CodeInternal:         http.StatusInternalServerError,
	CodeUnauthorized:     http.StatusUnauthorized,
	CodeForbidden:        http.StatusForbidden,
	CodeRateLimited:      http.StatusTooManyRequests,
	CodeConflict:         http.StatusConflict,
	CodeJournalLeaseBusy: http.StatusConflict,
	CodeRequestTimeout:   http.StatusRequestTimeout,
	CodeUnavailable:      http.StatusServiceUnavailable,
}

// StatusOf returns the HTTP status of a framework code, and false for any other code.
func StatusOf(code string) (int, bool) {
	s, ok := frameworkStatus[code]
	return s, ok
}

// IsFrameworkCode reports whether code is one of the framework codes a server may send
// from any flow.
func IsFrameworkCode(code string) bool {
	_, ok := frameworkStatus[code]
	return ok
}

// Error is the one error type of engine, on the server and in the client. On the server a
// handler returns it (usually through a [CodeDef] or a helper such as [NotFound]) and
// the engine turns it into the envelope's error object; in the client it is the Error
// of a result, and Data holds the raw JSON payload.
type Error struct {
	// Code is a declared flow code, a gate code, a framework code or TransportError.
	Code string
	// Data is the per-code payload. Servers set any JSON-encodable value; the client
	// sets it to the raw JSON it received (a json.RawMessage).
	Data any
	// Status is the HTTP status; zero means the status of the code.
	Status int

	header http.Header
	cause  error
}

// NewError returns an error with the given code and payload. Data may be nil, which is
// sent as an empty object.
func NewError(code string, data any) *Error {
	return &Error{Code: code, Data: data}
}

// Error implements the error interface with the code and, when the payload has one, its
// message member.
func (e *Error) Error() string {
	if msg := e.Message(); msg != "" {
		return e.Code + ": " + msg
	}
	return e.Code
}

// Message returns data.message when the payload carries one (TransportError,
// validation and most framework codes do), or "".
func (e *Error) Message() string {
	var m struct {
		Message string `json:"message"`
	}
	switch d := e.Data.(type) {
	case nil:
		return ""
	case json.RawMessage:
		_ = json.Unmarshal(d, &m)
	case []byte:
		_ = json.Unmarshal(d, &m)
	case map[string]any:
		s, _ := d["message"].(string)
		return s
	default:
		b, err := json.Marshal(d)
		if err != nil {
			return ""
		}
		_ = json.Unmarshal(b, &m)
	}
	return m.Message
}

// DecodeData decodes the payload into v, whether it is raw JSON (client side) or a Go
// value (server side).
func (e *Error) DecodeData(v any) error {
	var raw []byte
	switch d := e.Data.(type) {
	case json.RawMessage:
		raw = d
	case []byte:
		raw = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		raw = b
	}
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	return json.Unmarshal(raw, v)
}

// Unwrap returns the cause recorded with [Error.WithCause]; it is logged, never sent.
func (e *Error) Unwrap() error { return e.cause }

// WithCause records err as the server-side cause (for logs and errors.Is), keeping it out
// of the reply.
func (e *Error) WithCause(err error) *Error {
	e.cause = err
	return e
}

// WithHeader adds a response header sent with this error, such as Retry-After.
func (e *Error) WithHeader(key, value string) *Error {
	if e.header == nil {
		e.header = http.Header{}
	}
	e.header.Add(key, value)
	return e
}

// Header returns the response headers attached with [Error.WithHeader].
func (e *Error) Header() http.Header { return e.header }

// HTTPStatus returns the status this error is answered with: its own, the framework
// code's, or 500.
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	if s, ok := StatusOf(e.Code); ok {
		return s
	}
	return http.StatusInternalServerError
}

// AsError returns the *Error in err's chain, or nil.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// IsCode reports whether err carries the given code.
func IsCode(err error, code string) bool {
	e := AsError(err)
	return e != nil && e.Code == code
}

// NotFound returns the framework NotFound error with a message.
func NotFound(format string, args ...any) *Error {
	return NewError(CodeNotFound, map[string]any{"message": fmt.Sprintf(format, args...)})
}

// Conflict returns the framework Conflict error with a message.
func Conflict(format string, args ...any) *Error {
	return NewError(CodeConflict, map[string]any{"message": fmt.Sprintf(format, args...)})
}

// Unauthorized returns the gate denial for a missing or invalid access token. Its data is
// the empty object, as the protocol requires.
func Unauthorized() *Error { return NewError(CodeUnauthorized, struct{}{}) }

// Forbidden returns the gate denial of a scope or policy check.
func Forbidden(gate, reason string) *Error {
	return NewError(CodeForbidden, ForbiddenData{Gate: gate, Reason: reason})
}

// ForbiddenData is the payload of Forbidden.
type ForbiddenData struct {
	Gate   string `json:"gate"`
	Reason string `json:"reason"`
}

// RateLimited returns the gate denial of a rate limit, with the Retry-After header in
// whole seconds (rounded up) beside retryAfterMs.
func RateLimited(retryAfterMs int64) *Error {
	secs := (retryAfterMs + 999) / 1000
	if secs < 1 {
		secs = 1
	}
	return NewError(CodeRateLimited, RateLimitedData{RetryAfterMs: retryAfterMs}).
		WithHeader("Retry-After", strconv.FormatInt(secs, 10))
}

// RateLimitedData is the payload of RateLimited.
type RateLimitedData struct {
	RetryAfterMs int64 `json:"retryAfterMs"`
}

// Unavailable returns the answer of a server at capacity for this kind of call: 503
// {message, retryAfterMs} with the Retry-After header in whole seconds (rounded up).
func Unavailable(message string, retryAfterMs int64) *Error {
	secs := max((retryAfterMs+999)/1000, 1)
	return NewError(CodeUnavailable, UnavailableData{Message: message, RetryAfterMs: retryAfterMs}).
		WithHeader("Retry-After", strconv.FormatInt(secs, 10))
}

// UnavailableData is the payload of Unavailable.
type UnavailableData struct {
	Message      string `json:"message"`
	RetryAfterMs int64  `json:"retryAfterMs"`
}

// ValidationIssue is one field-level problem of a request: the JSON path of the field
// ("" for the whole input) and what is wrong with it.
type ValidationIssue struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// ValidationData is the payload of ValidationError.
type ValidationData struct {
	Message string            `json:"message"`
	Issues  []ValidationIssue `json:"issues"`
}

// Invalid returns a ValidationError with the given issues; the message summarises them.
func Invalid(issues ...ValidationIssue) *Error {
	msg := "invalid input"
	if len(issues) > 0 {
		first := issues[0]
		if first.Path != "" {
			msg = "invalid input: " + first.Path + ": " + first.Message
		} else {
			msg = "invalid input: " + first.Message
		}
	}
	return NewError(CodeValidation, ValidationData{Message: msg, Issues: issues})
}

// ErrorSpec describes a declared error code of a flow: its HTTP status and the Go type
// of its payload. [CodeDef] implements it; the descriptor publishes it.
type ErrorSpec interface {
	Code() string
	Status() int
	DataType() reflect.Type
}

// CodeDef is a declared error code with a typed payload D. Declare it once, list it in
// the flow's [Errors], return [CodeDef.New] from the handler and read it back in the
// client with [CodeDef.DataOf].
type CodeDef[D any] struct {
	code   string
	status int
}

// NewCode declares an error code with its HTTP status and payload type D.
func NewCode[D any](code string, status int) CodeDef[D] {
	return CodeDef[D]{code: code, status: status}
}

// Code returns the code's name.
func (c CodeDef[D]) Code() string { return c.code }

// Status returns the code's HTTP status.
func (c CodeDef[D]) Status() int { return c.status }

// DataType returns the payload's Go type.
func (c CodeDef[D]) DataType() reflect.Type { return reflect.TypeFor[D]() }

// New returns the error carrying data, answered with the code's status.
func (c CodeDef[D]) New(data D) *Error {
	return &Error{Code: c.code, Data: data, Status: c.status}
}

// Is reports whether err carries this code.
func (c CodeDef[D]) Is(err error) bool { return IsCode(err, c.code) }

// DataOf returns the typed payload when err carries this code.
func (c CodeDef[D]) DataOf(err error) (D, bool) {
	var d D
	e := AsError(err)
	if e == nil || e.Code != c.code {
		return d, false
	}
	if v, ok := e.Data.(D); ok {
		return v, true
	}
	if err := e.DecodeData(&d); err != nil {
		return d, false
	}
	return d, true
}
