package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/internal/testenv"
)

// TestMultiInstance runs real processes of this app on one Postgres database: a run
// streamed by A parks; A is killed with SIGKILL; the approval goes through B, which
// resumes the run; a follower on B sees the whole run with no gap and no duplicate. Then
// a run is killed mid-stream on a new A; B takes it over once the lease expires, without
// calling the model again for the recorded steps.
func TestMultiInstance(t *testing.T) {
	dsn := testenv.PostgresDSN(t, "the multi-instance test")
	if testing.Short() {
		t.Skip("-short: the multi-instance test builds and starts processes")
	}
	dsn = testenv.Schema(t, dsn, "conformance_")
	bin := testenv.Build(t, ".")

	// One fake model for both scenarios, routed by the conversation's first message.
	transferModel := openaitest.NewServer(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_transfer", Name: "tools_transfer", Arguments: `{"to":"bob","amount":500}`}}},
		openaitest.Turn{Text: "Transferred 500 to bob."},
	)
	defer transferModel.Close()
	words := strings.Repeat("slowly ", 40)
	weatherModel := openaitest.NewServer(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_weather", Name: "tools_weather", Arguments: `{"city":"Paris"}`}}},
		openaitest.Turn{Text: "It is mild in Paris, " + words + "done.", Delay: 60 * time.Millisecond},
	)
	defer weatherModel.Close()
	model := routeModels(t, transferModel, weatherModel)

	env := []string{
		"ENGINE_JOURNAL=" + dsn,
		"ENGINE_MODEL_BASE_URL=" + model + "/v1",
		"ENGINE_MODEL_API_KEY=test",
		"ENGINE_LEASE_TTL=2s",
		"ENGINE_JWT_KEY=multi-instance-test-key-0123456789abcdef",
	}
	a := startInstance(t, bin, "a", env)
	b := startInstance(t, bin, "b", env)
	token := signIn(t, a.URL, "alice@example.com")

	// Scenario 1: park on A, kill A, approve and follow through B.
	live := postStream(t, a.URL+"/chat", token, `{"message":"transfer 500 to bob"}`)
	fin := lastOfType(t, live, "RUN_FINISHED")
	interrupts := fin["outcome"].(map[string]any)["interrupts"].([]any)
	id := interrupts[0].(map[string]any)["id"].(string)
	runID := fin["runId"].(string)
	kill(t, a)

	status, body := postJSON(t, b.URL+"/agent/approvals/approve", token, `{"id":"`+id+`"}`)
	if status != http.StatusOK || body != `{"data":{"ok":true},"error":null}` {
		t.Fatalf("approve through B: %d %s", status, body)
	}
	events := follow(t, b.URL, runID, token)
	checkRun(t, events, "Transferred 500 to bob.")
	verifyAGUI(t, b.URL, runID, token)
	if n := transferModel.RequestCount(); n != 2 {
		t.Errorf("the transfer conversation called the model %d times, want 2 (one per recorded step)", n)
	}

	// Scenario 2: kill A mid-stream; B takes the run over after the lease expires.
	a2 := startInstance(t, bin, "a2", env)
	runID2 := streamUntilKilled(t, a2, token, `{"message":"weather in Paris"}`)
	events2 := follow(t, b.URL, runID2, token)
	checkRun(t, events2, "done.")
	verifyAGUI(t, b.URL, runID2, token)
	lost := 0
	for _, ev := range events2 {
		if ev.typ == "RUN_ERROR" && ev.obj["code"] == "WorkerLost" {
			lost++
		}
	}
	if lost != 1 {
		t.Errorf("want one RUN_ERROR WorkerLost marking the dead worker in the log, got %d", lost)
	}
	byTurn := map[int]int{}
	for _, r := range weatherModel.Requests() {
		n := 0
		for _, m := range r.Messages {
			if m.Role == "assistant" {
				n++
			}
		}
		byTurn[n]++
	}
	if byTurn[0] != 1 {
		t.Errorf("the recorded first model step ran %d times, want exactly 1", byTurn[0])
	}
	if byTurn[1] != 2 {
		t.Errorf("the interrupted second step ran %d times, want 2 (once on A, once resumed on B)", byTurn[1])
	}
}

// verifyAGUI checks the run's whole follow stream with the AG-UI protocol's own client
// library when AGUI_VERIFY names its verify.mjs (CI sets it).
func verifyAGUI(t *testing.T, base, runID, token string) {
	t.Helper()
	script := os.Getenv("AGUI_VERIFY")
	if script == "" {
		t.Log("AGUI_VERIFY is not set: the follow stream is not checked with the AG-UI verifier here (CI checks it)")
		return
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/agent/runs/"+runID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	file := filepath.Join(t.TempDir(), "follow.sse")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", script, "--no-done", file).CombinedOutput()
	if err != nil {
		t.Fatalf("AG-UI verifier rejected the followed log: %v\n%s", err, out)
	}
}

// startInstance starts one process of the app, named name, stopped at the test's end.
func startInstance(t *testing.T, bin, name string, env []string) *testenv.Process {
	t.Helper()
	return testenv.StartProcess(t, bin, testenv.ProcessOptions{Name: name, Env: env})
}

// kill ends in with SIGKILL, as a crash would.
func kill(t *testing.T, in *testenv.Process) {
	t.Helper()
	if err := in.Kill(); err != nil {
		t.Fatal(err)
	}
}

// routeModels serves one base URL that sends each chat-completions request to the fake
// whose scenario matches the conversation's first message.
func routeModels(t *testing.T, transfer, weather *openaitest.Server) string {
	t.Helper()
	proxy := func(target string) *httputil.ReverseProxy {
		u, _ := url.Parse(strings.TrimSuffix(target, "/v1"))
		return httputil.NewSingleHostReverseProxy(u)
	}
	pt, pw := proxy(transfer.URL()), proxy(weather.URL())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte("transfer 500")) {
			pt.ServeHTTP(w, r)
			return
		}
		pw.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func signIn(t *testing.T, base, email string) string {
	t.Helper()
	status, body := postJSON(t, base+"/_engine/auth/signInEmail", "", `{"email":"`+email+`","password":"correct horse battery staple"}`)
	if status != http.StatusOK {
		t.Fatalf("sign in: %d %s", status, body)
	}
	var env struct {
		Data struct {
			AccessToken string `json:"accessToken"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil || env.Data.AccessToken == "" {
		t.Fatalf("sign in reply: %s", body)
	}
	return env.Data.AccessToken
}

func postJSON(t *testing.T, u, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, strings.TrimSpace(string(b))
}

type event struct {
	seq int64
	typ string
	obj map[string]any
}

func postStream(t *testing.T, u, token, body string) []event {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("POST %s: %d %s", u, res.StatusCode, b)
	}
	return readEvents(t, res.Body, nil)
}

func readEvents(t *testing.T, body io.Reader, each func(event) bool) []event {
	t.Helper()
	var out []event
	for f, err := range agent.ReadFrames(body) {
		if err != nil {
			break
		}
		raw, _ := json.Marshal(f.Event)
		var obj map[string]any
		_ = json.Unmarshal(raw, &obj)
		ev := event{seq: f.Seq, typ: fmt.Sprint(obj["type"]), obj: obj}
		out = append(out, ev)
		if each != nil && !each(ev) {
			break
		}
	}
	return out
}

func lastOfType(t *testing.T, evs []event, typ string) map[string]any {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].typ == typ {
			return evs[i].obj
		}
	}
	t.Fatalf("no %s event in %d events", typ, len(evs))
	return nil
}

// streamUntilKilled starts a run on in and kills the process once the model's slow
// second turn is streaming; it returns the agent run id.
func streamUntilKilled(t *testing.T, in *testenv.Process, token, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, in.URL+"/chat", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	runID, deltas := "", 0
	readEvents(t, res.Body, func(ev event) bool {
		switch ev.typ {
		case "RUN_STARTED":
			runID = ev.obj["runId"].(string)
		case "TEXT_MESSAGE_CONTENT":
			deltas++
			if deltas == 5 {
				kill(t, in)
				return false
			}
		}
		return true
	})
	if runID == "" || deltas < 5 {
		t.Fatalf("the run did not get to streaming its second turn (run %q, %d deltas)", runID, deltas)
	}
	return runID
}

// follow reads the whole log of a run through base, reconnecting with Last-Event-ID
// until the server ends the stream after the run's end.
func follow(t *testing.T, base, runID, token string) []event {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	var all []event
	last := int64(0)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, base+"/agent/runs/"+runID+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if last > 0 {
			req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			t.Fatalf("follow: %d %s", res.StatusCode, b)
		}
		evs := readEvents(t, res.Body, nil)
		res.Body.Close()
		for _, ev := range evs {
			// Seqs only jump where an instance that took the run over continues past
			// what the dead one may have sent live: at its WorkerLost RUN_ERROR.
			if ev.seq <= last || ev.seq != last+1 && (ev.typ != "RUN_ERROR" || ev.obj["code"] != "WorkerLost") {
				t.Fatalf("follow: seq %d (%s) after %d: a gap or a duplicate", ev.seq, ev.typ, last)
			}
			last = ev.seq
		}
		all = append(all, evs...)
		if len(all) > 0 {
			if end := all[len(all)-1]; end.typ == "RUN_FINISHED" && end.obj["outcome"] == nil {
				return all
			}
		}
	}
	t.Fatalf("the run %s did not finish in time; %d events followed", runID, len(all))
	return nil
}

// checkRun checks that the followed log ends with a completed run whose last text ends
// with want.
func checkRun(t *testing.T, evs []event, want string) {
	t.Helper()
	fin := evs[len(evs)-1].obj
	res, _ := fin["result"].(map[string]any)
	if res["stopReason"] != "completed" {
		t.Fatalf("final RUN_FINISHED: %v", fin)
	}
	var text strings.Builder
	for _, ev := range evs {
		if ev.typ == "TEXT_MESSAGE_START" {
			text.Reset()
		}
		if ev.typ == "TEXT_MESSAGE_CONTENT" {
			text.WriteString(fmt.Sprint(ev.obj["delta"]))
		}
	}
	if !strings.HasSuffix(text.String(), want) {
		t.Fatalf("last text %q does not end with %q", text.String(), want)
	}
	starts := 0
	for _, ev := range evs {
		if ev.typ == "RUN_STARTED" {
			starts++
		}
	}
	if starts < 2 {
		t.Fatalf("a resumed run must open with RUN_STARTED again; saw %d RUN_STARTED", starts)
	}
}
