package httpx_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/httpx"
)

// A handler streams agent events: one reusable buffer, the stored row's seq as id, and
// [DONE] at the end. Close before returning stops the writer's timers.
func ExampleNewSSEWriter() {
	handler := func(rw http.ResponseWriter, r *http.Request) {
		w := httpx.NewSSEWriter(rw, httpx.SSEOptions{})
		defer w.Close()
		var buf []byte
		events := []agui.Event{
			agui.RunStarted{ThreadID: "t-1", RunID: "r-1"},
			agui.RunFinished{ThreadID: "t-1", RunID: "r-1"},
		}
		for seq, ev := range events {
			buf, _ = agui.AppendJSON(buf[:0], ev)
			if err := w.WriteEvent(int64(seq+1), buf); err != nil {
				return // the client went away
			}
		}
		_ = w.WriteDone()
	}
	rec := httptest.NewRecorder()
	handler(rec, httptest.NewRequest("POST", "/chat", nil))
	fmt.Print(rec.Body.String())
	// Output:
	// id: 1
	// data: {"type":"RUN_STARTED","threadId":"t-1","runId":"r-1"}
	//
	// id: 2
	// data: {"type":"RUN_FINISHED","threadId":"t-1","runId":"r-1"}
	//
	// data: [DONE]
}

func ExampleSSEReader() {
	body := "id: 7\r\ndata: {\"a\":1}\r\n\r\n: ping\n\ndata: line one\ndata: line two\n\n"
	r := httpx.NewSSEReader(strings.NewReader(body))
	for f, err := range r.All() {
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		fmt.Printf("id=%q hasID=%v data=%q\n", f.ID, f.HasID, f.Data)
	}
	fmt.Println("last event id:", r.LastEventID())
	// Output:
	// id="7" hasID=true data="{\"a\":1}"
	// id="" hasID=false data="line one\nline two"
	// last event id: 7
}
