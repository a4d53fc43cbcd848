package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/bbc28f59/engine"
)

// TestRetryAfterRoundsUpToWholeSeconds pins the Retry-After header of the two
// capacity answers: whole seconds, rounded up, never below one.
func TestRetryAfterRoundsUpToWholeSeconds(t *testing.T) {
	for _, tt := range []struct {
		ms   int64
		want string
	}{{-5, "1"}, {0, "1"}, {1, "1"}, {999, "1"}, {1000, "1"}, {1001, "2"}, {2000, "2"}, {2500, "3"}} {
		if got := engine.RateLimited(tt.ms).Header().Get("Retry-After"); got != tt.want {
			t.Errorf("RateLimited(%d) Retry-After = %q, want %q", tt.ms, got, tt.want)
		}
		if got := engine.Unavailable("busy", tt.ms).Header().Get("Retry-After"); got != tt.want {
			t.Errorf("Unavailable(%d) Retry-After = %q, want %q", tt.ms, got, tt.want)
		}
	}
	e := engine.Unavailable("busy", 1500)
	var d engine.UnavailableData
	if err := e.DecodeData(&d); err != nil || d != (engine.UnavailableData{Message: "busy", RetryAfterMs: 1500}) {
		t.Fatalf("Unavailable data %+v (%v)", d, err)
	}
	if e.HTTPStatus() != http.StatusServiceUnavailable || e.Message() != "busy" {
		t.Fatalf("Unavailable: status %d message %q", e.HTTPStatus(), e.Message())
	}
}

func TestInvalidSummarisesTheFirstIssue(t *testing.T) {
	for _, tt := range []struct {
		issues []engine.ValidationIssue
		want   string
	}{
		{nil, "invalid input"},
		{[]engine.ValidationIssue{{Message: "empty body"}, {Path: "b", Message: "x"}}, "invalid input: empty body"},
		{[]engine.ValidationIssue{{Path: "a.b", Message: "is required"}}, "invalid input: a.b: is required"},
	} {
		e := engine.Invalid(tt.issues...)
		if e.Code != engine.CodeValidation || e.Message() != tt.want || e.Error() != engine.CodeValidation+": "+tt.want {
			t.Errorf("Invalid(%v): code %s message %q error %q, want %q", tt.issues, e.Code, e.Message(), e.Error(), tt.want)
		}
		var d engine.ValidationData
		if err := e.DecodeData(&d); err != nil || len(d.Issues) != len(tt.issues) {
			t.Errorf("Invalid(%v) data %+v (%v)", tt.issues, d, err)
		}
	}
}

func TestErrorMessageOfEveryPayloadKind(t *testing.T) {
	for _, tt := range []struct {
		name string
		data any
		want string
	}{
		{"nil", nil, ""},
		{"raw", json.RawMessage(`{"message":"raw msg"}`), "raw msg"},
		{"bytes", []byte(`{"message":"byte msg"}`), "byte msg"},
		{"map", map[string]any{"message": "map msg"}, "map msg"},
		{"map without", map[string]any{"other": 1}, ""},
		{"struct", engine.UnavailableData{Message: "struct msg"}, "struct msg"},
		{"struct without", engine.ForbiddenData{Gate: "g"}, ""},
		{"unencodable", make(chan int), ""},
	} {
		e := engine.NewError("Code", tt.data)
		if got := e.Message(); got != tt.want {
			t.Errorf("%s: Message() = %q, want %q", tt.name, got, tt.want)
		}
		want := "Code"
		if tt.want != "" {
			want = "Code: " + tt.want
		}
		if got := e.Error(); got != want {
			t.Errorf("%s: Error() = %q, want %q", tt.name, got, want)
		}
	}
}

func TestErrorDecodeData(t *testing.T) {
	var m map[string]any
	if err := engine.NewError("X", json.RawMessage(nil)).DecodeData(&m); err != nil || len(m) != 0 || m == nil {
		t.Fatalf("empty raw payload: %v, %v (want the empty object)", m, err)
	}
	m = nil
	if err := engine.NewError("X", []byte(`{"a":1}`)).DecodeData(&m); err != nil || m["a"] != float64(1) {
		t.Fatalf("byte payload: %v, %v", m, err)
	}
	if err := engine.NewError("X", make(chan int)).DecodeData(&m); err == nil {
		t.Fatal("an unencodable payload decoded without error")
	}
}

func TestErrorStatusHeadersAndCause(t *testing.T) {
	if s := (&engine.Error{Code: engine.CodeNotFound, Status: 418}).HTTPStatus(); s != 418 {
		t.Fatalf("explicit status: %d", s)
	}
	if s := engine.NewError(engine.CodeConflict, nil).HTTPStatus(); s != http.StatusConflict {
		t.Fatalf("framework status: %d", s)
	}
	if s := engine.NewError("Mine", nil).HTTPStatus(); s != http.StatusInternalServerError {
		t.Fatalf("unknown code status: %d", s)
	}
	if s, ok := engine.StatusOf(engine.CodeRequestTimeout); !ok || s != http.StatusRequestTimeout {
		t.Fatalf("StatusOf: %d %v", s, ok)
	}
	if _, ok := engine.StatusOf(engine.CodeTransportError); ok || engine.IsFrameworkCode(engine.CodeTransportError) || !engine.IsFrameworkCode(engine.CodeUnavailable) {
		t.Fatal("TransportError is a client code, Unavailable a framework code")
	}
	e := engine.NewError("X", nil).WithHeader("Vary", "a").WithHeader("Vary", "b")
	if got := e.Header().Values("Vary"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("headers %v", got)
	}
	if engine.NewError("X", nil).Header() != nil {
		t.Fatal("an error without headers has some")
	}
	cause := errors.New("disk full")
	wrapped := fmt.Errorf("saving: %w", engine.Conflict("row %d", 7).WithCause(cause))
	if !errors.Is(wrapped, cause) || !engine.IsCode(wrapped, engine.CodeConflict) || engine.IsCode(wrapped, engine.CodeNotFound) {
		t.Fatal("cause or code lost through wrapping")
	}
	if engine.IsCode(cause, engine.CodeConflict) || engine.AsError(cause) != nil || engine.IsCode(nil, "") {
		t.Fatal("a plain error carries a code")
	}
	if m := engine.AsError(wrapped).Message(); m != "row 7" {
		t.Fatalf("Conflict message %q", m)
	}
}

type teapotData struct {
	Cups int `json:"cups"`
}

func TestCodeDefDataOf(t *testing.T) {
	teapot := engine.NewCode[teapotData]("Teapot", 418)
	if teapot.Code() != "Teapot" || teapot.Status() != 418 || teapot.DataType().Name() != "teapotData" {
		t.Fatalf("code def %s %d %v", teapot.Code(), teapot.Status(), teapot.DataType())
	}
	e := teapot.New(teapotData{Cups: 2})
	if e.HTTPStatus() != 418 || !teapot.Is(e) {
		t.Fatalf("New: %+v", e)
	}
	for _, tt := range []struct {
		name string
		err  error
		want teapotData
		ok   bool
	}{
		{"typed", e, teapotData{Cups: 2}, true},
		{"raw", &engine.Error{Code: "Teapot", Data: json.RawMessage(`{"cups":3}`)}, teapotData{Cups: 3}, true},
		{"bad raw", &engine.Error{Code: "Teapot", Data: json.RawMessage(`{"cups":"many"}`)}, teapotData{}, false},
		{"other code", &engine.Error{Code: "Kettle", Data: teapotData{Cups: 4}}, teapotData{}, false},
		{"plain", errors.New("x"), teapotData{}, false},
	} {
		got, ok := teapot.DataOf(tt.err)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("%s: DataOf = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}
