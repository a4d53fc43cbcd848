package ai_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// update rewrites the golden files under ai/testdata from the current streams instead of
// comparing with them: go test ./ai/ -run . -update
var update = flag.Bool("update", false, "rewrite the golden files under testdata (SSE transcripts and follow logs)")

const goldenDir = "testdata/sse"

// sseBlock is one SSE frame as written: its id line (if any) and its data.
type sseBlock struct {
	id    string
	hasID bool
	data  string
}

// blocks splits raw SSE text into frames, dropping comment lines.
func blocks(t *testing.T, raw string) []sseBlock {
	t.Helper()
	var out []sseBlock
	for _, chunk := range strings.Split(raw, "\n\n") {
		if strings.TrimSpace(chunk) == "" {
			continue
		}
		var b sseBlock
		var data []string
		for _, line := range strings.Split(chunk, "\n") {
			switch {
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "id: "):
				b.id, b.hasID = strings.TrimPrefix(line, "id: "), true
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			default:
				t.Fatalf("unexpected SSE line %q in:\n%s", line, raw)
			}
		}
		if len(data) == 0 {
			continue // a frame of comments only
		}
		b.data = strings.Join(data, "\n")
		out = append(out, b)
	}
	return out
}

var (
	runIDPattern       = regexp.MustCompile(`run_[0-9a-f-]{36}`)
	interruptIDPattern = regexp.MustCompile(`"id":"[A-Za-z0-9_-]{16,}"`)
	expiresPattern     = regexp.MustCompile(`"expiresAt":"[^"]*"`)
)

// normalise makes a transcript reproducible: run ids become run_X (run_X2, … for
// further runs, such as a subagent's), interrupt ids interrupt_X, expiresAt a fixed
// time, and id: lines are renumbered 1, 2, … in order, because how many delta rows the
// log coalesced before a structural event (and so its seq) depends on timing. A follow
// transcript (follow true) also has its consecutive deltas of one message or tool call
// merged into one frame, for the same reason.
func normalise(t *testing.T, raw string, follow bool) string {
	t.Helper()
	names := map[string]string{}
	raw = runIDPattern.ReplaceAllStringFunc(raw, func(id string) string {
		if n, ok := names[id]; ok {
			return n
		}
		n := "run_X"
		if len(names) > 0 {
			n += strconv.Itoa(len(names) + 1)
		}
		names[id] = n
		return n
	})
	raw = interruptIDPattern.ReplaceAllString(raw, `"id":"interrupt_X"`)
	raw = expiresPattern.ReplaceAllString(raw, `"expiresAt":"2000-01-01T00:00:00Z"`)
	bs := blocks(t, raw)
	if follow {
		bs = coalesce(t, bs)
	}
	var sb strings.Builder
	n := 0
	for _, b := range bs {
		if b.hasID {
			n++
			fmt.Fprintf(&sb, "id: %d\n", n)
		}
		fmt.Fprintf(&sb, "data: %s\n\n", b.data)
	}
	return sb.String()
}

// delta is the shape of TEXT_MESSAGE_CONTENT, REASONING_MESSAGE_CONTENT and TOOL_CALL_ARGS.
type delta struct {
	Type       string `json:"type"`
	MessageID  string `json:"messageId,omitempty"`
	ToolCallID string `json:"toolCallId,omitempty"`
	Delta      string `json:"delta"`
}

// coalesce merges consecutive deltas of one message or tool call, and writes every
// delta frame with its members in one order.
func coalesce(t *testing.T, bs []sseBlock) []sseBlock {
	t.Helper()
	var out []sseBlock
	var last *delta
	for _, b := range bs {
		var d delta
		isDelta := json.Unmarshal([]byte(b.data), &d) == nil &&
			(d.Type == "TEXT_MESSAGE_CONTENT" || d.Type == "TOOL_CALL_ARGS" || d.Type == "REASONING_MESSAGE_CONTENT")
		if !isDelta {
			out = append(out, b)
			last = nil
			continue
		}
		if last != nil && last.Type == d.Type && last.MessageID == d.MessageID && last.ToolCallID == d.ToolCallID {
			last.Delta += d.Delta
		} else {
			out = append(out, b)
			last = &d
		}
		enc, err := json.Marshal(last)
		if err != nil {
			t.Fatal(err)
		}
		out[len(out)-1].data = string(enc)
	}
	return out
}

// golden compares the normalised live transcript of scenario with
// testdata/sse/<scenario>.sse, or writes it under -update.
func golden(t *testing.T, scenario string, tr transcript) {
	t.Helper()
	compareGolden(t, scenario+".sse", normalise(t, tr.raw, false))
}

// goldenFollow does what golden does for a follow transcript, in <scenario>.follow.sse.
func goldenFollow(t *testing.T, scenario string, tr transcript) {
	t.Helper()
	compareGolden(t, scenario+".follow.sse", normalise(t, tr.raw, true))
}

func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden transcript %s: %v (run the test with -update to create it)", path, err)
	}
	if got != string(want) {
		t.Errorf("transcript differs from %s (rerun with -update if the change is intended)\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// TestNormalise checks the normaliser itself: deltas merge only within one message,
// ids are renumbered, and run ids are named in order of appearance.
func TestNormalise(t *testing.T) {
	t.Parallel()
	raw := "id: 7\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"run_01234567-89ab-7def-8123-456789abcdef\",\"runId\":\"run_01234567-89ab-7def-8123-456789abcdef\"}\n\n" +
		"id: 9\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m-1\",\"delta\":\"a\"}\n\n" +
		"id: 10\ndata: {\"delta\":\"b\",\"messageId\":\"m-1\",\"type\":\"TEXT_MESSAGE_CONTENT\"}\n\n" +
		"id: 11\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m-2\",\"delta\":\"c\"}\n\n" +
		": ping\n\n" +
		"data: {\"type\":\"CUSTOM\",\"name\":\"x\",\"value\":{\"runId\":\"run_ffffffff-ffff-7fff-bfff-ffffffffffff\"}}\n\n"
	got := normalise(t, raw, true)
	want := "id: 1\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"run_X\",\"runId\":\"run_X\"}\n\n" +
		"id: 2\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m-1\",\"delta\":\"ab\"}\n\n" +
		"id: 3\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m-2\",\"delta\":\"c\"}\n\n" +
		"data: {\"type\":\"CUSTOM\",\"name\":\"x\",\"value\":{\"runId\":\"run_X2\"}}\n\n"
	if got != want {
		t.Errorf("normalise:\n%s\nwant:\n%s", got, want)
	}
}

// TestGoldenTranscriptsPassAGUIVerify runs the AG-UI protocol's own verifier (the
// agui-verify tool: @ag-ui/core schemas and @ag-ui/client's sequence rules) over every
// golden transcript. AGUI_VERIFY names verify.mjs; by default /tmp/agui-verify/verify.mjs.
func TestGoldenTranscriptsPassAGUIVerify(t *testing.T) {
	if *update {
		t.Skip("the transcripts are being rewritten; run again without -update to verify them")
	}
	t.Parallel()
	node, verifier := aguiVerifier(t)
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.sse"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden transcripts under " + goldenDir)
	}
	var runs, follows []string
	for _, f := range files {
		if strings.HasSuffix(f, ".follow.sse") {
			follows = append(follows, f)
		} else {
			runs = append(runs, f)
		}
	}
	if len(runs) > 0 {
		runVerifier(t, node, verifier, runs...)
	}
	if len(follows) > 0 {
		runVerifier(t, node, verifier, append([]string{"--no-done"}, follows...)...)
	}
}

// aguiVerifier finds node and the agui-verify script, skipping the test with the reason
// when either is missing.
func aguiVerifier(t *testing.T) (node, script string) {
	t.Helper()
	node, script, missing := findVerifier()
	if missing != "" {
		t.Skip(missing)
	}
	return node, script
}

// findVerifier locates node and the agui-verify script, or says what is missing.
// AGUI_VERIFY names verify.mjs; by default /tmp/agui-verify/verify.mjs.
func findVerifier() (node, script, missing string) {
	node, err := exec.LookPath("node")
	if err != nil {
		return "", "", "node is not installed, so the AG-UI verifier cannot run"
	}
	script = os.Getenv("AGUI_VERIFY")
	if script == "" {
		script = "/tmp/agui-verify/verify.mjs"
	}
	if _, err := os.Stat(script); err != nil {
		return "", "", "AG-UI verifier not found at " + script + " (set AGUI_VERIFY, or: cp -r /work/shared/tools/agui-verify /tmp/ && npm ci --prefix /tmp/agui-verify)"
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules")); err != nil {
		return "", "", "the AG-UI verifier at " + script + " has no node_modules (run npm ci in its directory)"
	}
	return node, script, ""
}

// runVerifier runs the verifier on args and fails the test with its report.
func runVerifier(t *testing.T, node, script string, args ...string) {
	t.Helper()
	out, err := exec.Command(node, append([]string{script}, args...)...).CombinedOutput()
	if err != nil {
		t.Errorf("node %s %s: %v\n%s", script, strings.Join(args, " "), err, out)
	}
}

// verifyAGUI checks one transcript that is not a golden file (its content varies from
// run to run) with the AG-UI verifier; follow transcripts have no [DONE].
func verifyAGUI(t *testing.T, raw string, follow bool) {
	t.Helper()
	node, script, missing := findVerifier()
	if missing != "" {
		t.Log("transcript not checked: " + missing)
		return
	}
	path := filepath.Join(t.TempDir(), "stream.sse")
	if err := os.WriteFile(path, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	if follow {
		runVerifier(t, node, script, "--no-done", path)
	} else {
		runVerifier(t, node, script, path)
	}
}
