package engine

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// panicWriter is a ResponseWriter whose Header panics, as a broken middleware's might.
type panicWriter struct{ http.ResponseWriter }

func (panicWriter) Header() http.Header { panic("broken writer") }

func TestOpenSSESendsHeadersOffTheCallersStack(t *testing.T) {
	rec := httptest.NewRecorder()
	sse := openSSE(rec)
	defer sse.Close()
	if !rec.Flushed || rec.Code != http.StatusOK {
		t.Fatalf("headers not sent: flushed %v, status %d", rec.Flushed, rec.Code)
	}
	if got := rec.Header().Get("Content-Type"); got != "text/event-stream" {
		t.Fatalf("Content-Type %q", got)
	}
	if err := sse.WriteEvent(0, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := sse.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.Body.String(), "data: {\"a\":1}\n\n"; got != want {
		t.Fatalf("body %q, want %q", got, want)
	}
}

func TestOpenSSERaisesAPanicInTheCaller(t *testing.T) {
	defer func() {
		if p := recover(); p != "broken writer" {
			t.Fatalf("recovered %v, want the writer's panic", p)
		}
	}()
	openSSE(panicWriter{httptest.NewRecorder()})
	t.Fatal("openSSE returned")
}
