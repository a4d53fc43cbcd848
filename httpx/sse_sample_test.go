package httpx_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/httpx"
)

// update rewrites the golden SSE transcripts under testdata/sse: go test ./httpx/ -update
var update = flag.Bool("update", false, "rewrite the SSE transcripts under testdata/sse")

// sampleRuns are small run streams as the engine sends them: every rule of the Events
// section in order, stored-row ids, and the final [DONE].
var sampleRuns = map[string][]agui.Event{
	"sample-run.sse": {
		agui.RunStarted{ThreadID: "thread-1", RunID: "run-1"},
		agui.StepStarted{StepName: "step-1"},
		agui.TextMessageStart{MessageID: "m-1", Role: agui.RoleAssistant},
		agui.TextMessageContent{MessageID: "m-1", Delta: "Let me check "},
		agui.TextMessageContent{MessageID: "m-1", Delta: "the order."},
		agui.TextMessageEnd{MessageID: "m-1"},
		agui.ToolCallStart{ToolCallID: "call-1", ToolCallName: "orders.get", ParentMessageID: "m-1"},
		agui.ToolCallArgs{ToolCallID: "call-1", Delta: `{"id":`},
		agui.ToolCallArgs{ToolCallID: "call-1", Delta: `"o-42"}`},
		agui.ToolCallEnd{ToolCallID: "call-1"},
		agui.ToolCallResult{MessageID: "m-2", ToolCallID: "call-1", Content: `{"status":"shipped"}`, Role: agui.RoleTool},
		agui.StepFinished{StepName: "step-1"},
		agui.StepStarted{StepName: "step-2"},
		agui.TextMessageStart{MessageID: "m-3", Role: agui.RoleAssistant},
		agui.TextMessageContent{MessageID: "m-3", Delta: "It has shipped <today> & \"soon\" arrives.\n"},
		agui.TextMessageEnd{MessageID: "m-3"},
		agui.StepFinished{StepName: "step-2"},
		agui.RunFinished{
			ThreadID: "thread-1", RunID: "run-1",
			Result: &agui.RunResult{Cost: 0.00042, StopReason: agui.StopCompleted, Output: json.RawMessage(`{"status":"shipped"}`)},
			Usage:  []agui.Usage{{InputTokens: new(int64(120)), OutputTokens: new(int64(18))}},
		},
	},
	"interrupt-run.sse": {
		agui.RunStarted{ThreadID: "thread-2", RunID: "run-2"},
		agui.StepStarted{StepName: "step-1"},
		agui.Custom{Name: agui.CustomSubagentStarted, Value: json.RawMessage(`{"agent":"refunds"}`)},
		agui.ToolCallStart{ToolCallID: "call-9", ToolCallName: "refunds.issue"},
		agui.ToolCallArgs{ToolCallID: "call-9", Delta: `{"amount":25}`},
		agui.ToolCallEnd{ToolCallID: "call-9"},
		agui.StepFinished{StepName: "step-1"},
		agui.RunFinished{
			ThreadID: "thread-2", RunID: "run-2",
			Result: &agui.RunResult{Cost: 0, StopReason: agui.StopCompleted},
			Usage:  []agui.Usage{{InputTokens: new(int64(40))}},
			Outcome: agui.InterruptOutcome(agui.Interrupt{
				ID:         "Zmxvdy1ydW4tNy5jYWxsLTk", // base64url("flow-run-7.call-9")
				Reason:     agui.ReasonApproval,
				Payload:    agui.InterruptPayload{Tool: "refunds.issue", Args: json.RawMessage(`{"amount":25}`)},
				ToolCallID: "call-9",
				ExpiresAt:  time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
			}),
		},
	},
}

// writeRun streams events through a real SSEWriter, every frame with its seq as id.
func writeRun(t *testing.T, events []agui.Event) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	w := httpx.NewSSEWriter(rec, httpx.SSEOptions{Heartbeat: -1})
	for i, ev := range events {
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("marshal %T: %v", ev, err)
		}
		if err := w.WriteEvent(int64(i+1), data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteDone(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return rec.Body.Bytes()
}

func TestSSESampleRunsGoldenAndAGUIVerified(t *testing.T) {
	t.Parallel()
	for name, events := range sampleRuns {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := writeRun(t, events)
			path := filepath.Join("testdata", "sse", name)
			want, err := os.ReadFile(path)
			if *update || os.IsNotExist(err) {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s", path)
			} else if err != nil {
				t.Fatal(err)
			} else if !bytes.Equal(got, want) {
				t.Fatalf("%s differs from what the writer produces (run with -update after checking):\n got %s\nwant %s", path, got, want)
			}
			// The transcript reads back as the same events.
			r := httpx.NewSSEReader(bytes.NewReader(got))
			for i, ev := range events {
				f, err := r.Next()
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				back, err := agui.Decode([]byte(f.Data))
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				a, _ := json.Marshal(ev)
				b, _ := json.Marshal(back)
				if !bytes.Equal(a, b) || f.ID != strconv.Itoa(i+1) {
					t.Fatalf("frame %d read back as id %q %s, want %s", i, f.ID, b, a)
				}
			}
			runAGUIVerify(t, path)
		})
	}
}

// TestSSEAGUIVerifyRejects is the verifier's negative control: a transcript breaking
// one rule each must fail, or the passing runs above would prove nothing.
func TestSSEAGUIVerifyRejects(t *testing.T) {
	t.Parallel()
	start := "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n"
	cases := map[string]string{
		"unknown top-level field": start + "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\",\"cost\":1}\n\ndata: [DONE]\n\n",
		"no [DONE]":               start + "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
		"ids not increasing":      "id: 2\n" + start + "id: 2\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\ndata: [DONE]\n\n",
		"CRLF":                    strings.ReplaceAll(start, "\n", "\r\n") + "data: [DONE]\r\n\r\n",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "bad.sse")
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			node, script := aguiVerifier(t)
			if out, err := exec.Command(node, script, path).CombinedOutput(); err == nil {
				t.Fatalf("agui-verify accepted a bad transcript:\n%s", out)
			}
		})
	}
}

// runAGUIVerify checks a transcript with AG-UI's own TypeScript client when node and an
// installed copy of tools/agui-verify are at hand (AGUI_VERIFY names verify.mjs;
// /tmp/agui-verify is the default). CI installs it; elsewhere the check is skipped.
func runAGUIVerify(t *testing.T, path string) {
	t.Helper()
	node, script := aguiVerifier(t)
	out, err := exec.Command(node, script, path).CombinedOutput()
	if err != nil {
		t.Fatalf("agui-verify rejects %s: %v\n%s", path, err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}

// aguiVerifier finds node and verify.mjs, skipping the test when either is missing.
func aguiVerifier(t *testing.T) (node, script string) {
	t.Helper()
	script = os.Getenv("AGUI_VERIFY")
	if script == "" {
		script = "/tmp/agui-verify/verify.mjs"
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; skipping the AG-UI verifier")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@ag-ui", "core")); err != nil {
		t.Skipf("agui-verify is not installed next to %s (cp -r tools/agui-verify /tmp && npm ci --prefix /tmp/agui-verify); skipping the AG-UI verifier", script)
	}
	return node, script
}

func TestSSEOverHTTP(t *testing.T) {
	t.Parallel()
	const n = 2000
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := httpx.NewSSEWriter(rw, httpx.SSEOptions{})
		defer w.Close()
		for i := 1; i <= n; i++ {
			if i%500 == 0 {
				_ = w.Comment("checkpoint")
			}
			if err := w.WriteEvent(int64(i), []byte(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"`+strconv.Itoa(i)+`"}`)); err != nil {
				return
			}
		}
		_ = w.WriteDone()
	}))
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != httpx.SSEContentType {
		t.Fatalf("Content-Type = %q", ct)
	}
	r := httpx.NewSSEReader(resp.Body)
	for i := 1; i <= n; i++ {
		f, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.ID != strconv.Itoa(i) {
			t.Fatalf("frame %d has id %q", i, f.ID)
		}
	}
	if f, err := r.Next(); err != nil || f.Data != "[DONE]" {
		t.Fatalf("last frame = %+v, %v; want [DONE]", f, err)
	}
	if _, err := r.Next(); err == nil {
		t.Fatal("stream continues after [DONE]")
	}
}

// TestSSEWriterClientDisconnect checks that a handler streaming to a client that went
// away gets an error instead of a panic or a hang.
func TestSSEWriterClientDisconnect(t *testing.T) {
	t.Parallel()
	gotErr := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := httpx.NewSSEWriter(rw, httpx.SSEOptions{FlushWindow: -1})
		defer w.Close()
		payload := bytes.Repeat([]byte("x"), 4096)
		for {
			if err := w.WriteEvent(0, payload); err != nil {
				gotErr <- err
				return
			}
		}
	}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpx.NewSSEReader(resp.Body).Next(); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case err := <-gotErr:
		if err == nil {
			t.Fatal("nil error after disconnect")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler never saw the disconnect")
	}
}
