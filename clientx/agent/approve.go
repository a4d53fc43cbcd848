package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
)

// The paths of the built-in approval routes, relative to the client's base URL.
const (
	ApprovePath = "/agent/approvals/approve"
	DenyPath    = "/agent/approvals/deny"
)

// ErrConflict is matched (errors.Is) by the error of [Approve] or [Deny] when a decision
// is already stored for the interrupt. It is final: retrying cannot change the outcome.
var ErrConflict = errors.New("agent: a decision is already stored for this approval")

// DecisionError is a decision the server refused, or could not be asked about: Err is
// the envelope's error (NotFound, Forbidden, Conflict, ValidationError, ...) or a
// TransportError from the client. errors.As(err, new(*engine.Error)) reaches it, and
// errors.Is(err, [ErrConflict]) tells an already-decided approval apart.
type DecisionError struct {
	// Op is "approve" or "deny".
	Op string
	// Err is the error object of the reply, or the client's TransportError.
	Err *engine.Error
}

// Error names the decision and the code.
func (e *DecisionError) Error() string { return "agent: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the envelope's error, so errors.As finds the *engine.Error.
func (e *DecisionError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrConflict] and the decision was already stored.
func (e *DecisionError) Is(target error) bool {
	return target == ErrConflict && e.Err != nil && e.Err.Code == engine.CodeConflict
}

// Approve approves the approval interrupt id (the "id" of an interrupt record) on the
// app c talks to, through POST /agent/approvals/approve with c's headers, auth, timeout
// and retries. args, when not nil, replaces the tool's input; it must encode to a JSON
// object (a json.RawMessage is sent as it is), which the server validates like the
// model's arguments.
//
// While another worker holds the run's lease (409 JournalLeaseBusy) Approve waits for
// the reply's Retry-After and asks again, for as long as ctx allows; when ctx ends first
// the error carries the last JournalLeaseBusy. An approval already decided returns an
// error matching [ErrConflict], never retried. Other refusals are [*DecisionError]s.
func Approve(ctx context.Context, c *clientx.Client, id string, args any) error {
	body := map[string]any{"id": id}
	if args != nil {
		if raw, ok := args.(json.RawMessage); ok {
			if !json.Valid(raw) {
				return &DecisionError{Op: "approve", Err: clientError(engine.CodeValidation, "args is not valid JSON")}
			}
		}
		body["args"] = args
	}
	return decide(ctx, c, "approve", ApprovePath, body)
}

// Deny denies the approval interrupt id; reason, when not "", is what the model sees as
// the tool's result. Retries and errors are those of [Approve].
func Deny(ctx context.Context, c *clientx.Client, id, reason string) error {
	body := map[string]any{"id": id}
	if reason != "" {
		body["reason"] = reason
	}
	return decide(ctx, c, "deny", DenyPath, body)
}

// defaultLeaseWait is how long to wait after a JournalLeaseBusy reply that names no delay.
const defaultLeaseWait = time.Second

func decide(ctx context.Context, c *clientx.Client, op, path string, body map[string]any) error {
	if c == nil {
		return &DecisionError{Op: op, Err: clientError(engine.CodeValidation, "nil client")}
	}
	if id, _ := body["id"].(string); id == "" {
		return &DecisionError{Op: op, Err: clientError(engine.CodeValidation, "the interrupt id is required")}
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return &DecisionError{Op: op, Err: clientError(engine.CodeValidation, "encoding the decision: "+err.Error())}
	}
	target := c.BaseURL() + path
	for {
		status, header, reply, terr := c.Transport().Do(ctx, http.MethodPost, target, payload)
		if terr != nil {
			return &DecisionError{Op: op, Err: terr}
		}
		e := replyError(status, reply)
		if e == nil {
			return nil
		}
		if e.Code != engine.CodeJournalLeaseBusy {
			return &DecisionError{Op: op, Err: e}
		}
		wait := retryAfter(header, e)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("agent: %s: gave up waiting for the run's lease: %w", op, errors.Join(ctx.Err(), &DecisionError{Op: op, Err: e}))
		case <-t.C:
		}
	}
}

// replyError decodes the reply of an approval route: nil for a success envelope, the
// envelope's error, or a TransportError when the reply is not an envelope.
func replyError(status int, body []byte) *engine.Error {
	env := decodeEnvelope(body)
	if env == nil {
		return transportError(fmt.Sprintf("HTTP %d reply without a {data, error} envelope", status), status)
	}
	if env.Error == nil {
		if status >= 200 && status < 300 {
			return nil
		}
		return transportError(fmt.Sprintf("HTTP %d reply with a success envelope", status), status)
	}
	data := env.Error.Data
	if len(data) == 0 || string(data) == "null" {
		data = json.RawMessage(`{}`)
	}
	return &engine.Error{Code: env.Error.Code, Data: data, Status: status}
}

// retryAfter reads the delay of a JournalLeaseBusy reply: the Retry-After header
// (seconds or an HTTP date), else data.retryAfterMs, else a second.
func retryAfter(h http.Header, e *engine.Error) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 {
			return time.Duration(secs) * time.Second
		}
		if at, err := http.ParseTime(v); err == nil {
			return max(time.Until(at), 0)
		}
	}
	var d struct {
		RetryAfterMs int64 `json:"retryAfterMs"`
	}
	if e.DecodeData(&d) == nil && d.RetryAfterMs > 0 {
		return time.Duration(d.RetryAfterMs) * time.Millisecond
	}
	return defaultLeaseWait
}

func clientError(code, msg string) *engine.Error {
	b, _ := json.Marshal(map[string]string{"message": "agent: " + msg})
	return &engine.Error{Code: code, Data: json.RawMessage(b)}
}

func transportError(msg string, status int) *engine.Error {
	data := map[string]any{"message": msg}
	if status != 0 {
		data["status"] = status
	}
	b, _ := json.Marshal(data)
	return &engine.Error{Code: engine.CodeTransportError, Data: json.RawMessage(b), Status: status}
}
