package ai

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/uimessage"
)

// FuzzUIInput feeds the UI route's request conversion whatever JSON a client may send:
// it must never panic, and what it refuses (or the conversation it builds and the run
// refuses) is a ValidationError, answered 400.
func FuzzUIInput(f *testing.F) {
	f.Add(`{"id":"c","messages":[{"id":"u","role":"user","parts":[{"type":"text","text":"hi"}]}]}`)
	f.Add(`{"id":"c","messages":[{"id":"a","role":"assistant","parts":[{"type":"step-start"},{"type":"tool-x.y","toolCallId":"c1","state":"output-available","input":{"a":1},"output":"ok"},{"type":"dynamic-tool","toolName":"","toolCallId":"c2","state":"output-denied"}]}]}`)
	f.Add(`{"id":"c","messages":[{"id":"a","role":"assistant","parts":[{"type":"tool-t","toolCallId":"c1","state":"approval-responded","approval":{"id":"i","approved":false,"reason":"r"}}]}]}`)
	f.Add(`{"messages":[{"role":"user","parts":[{"type":"file"}]},{"role":"tool"}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		var req uimessage.Request
		if json.Unmarshal([]byte(body), &req) != nil {
			return
		}
		in, enc, err := uiInput(req)
		if err == nil && len(in.Resume) == 0 {
			_, err = conversation(in)
		}
		if err != nil {
			if e := engine.AsError(err); e == nil || e.HTTPStatus() != http.StatusBadRequest {
				t.Fatalf("%s: %v is not a ValidationError", body, err)
			}
			return
		}
		if enc == nil {
			t.Fatalf("%s: no encoder", body)
		}
		for _, e := range in.Resume {
			if e.Status != ResumeResolved && e.Status != ResumeCancelled || e.InterruptID == "" {
				t.Fatalf("%s: resume entry %+v", body, e)
			}
		}
	})
}
