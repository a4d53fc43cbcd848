package mcp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/mcp/internal/bank"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// keyedBank is the bank as a real one would guard its effect: a transfer moves money
// once per idempotency key, however often it is called with the key.
type keyedBank struct {
	mu      sync.Mutex
	calls   map[string]int // transfer calls by key
	applied int            // transfers that moved money
	called  chan struct{}  // one value per transfer call
}

func (k *keyedBank) effect(tool, key string) {
	if tool != "transfer" {
		return
	}
	k.mu.Lock()
	if k.calls[key] == 0 {
		k.applied++
	}
	k.calls[key]++
	k.mu.Unlock()
	k.called <- struct{}{}
}

// TestKilledAfterTheRemoteToolAnswered kills (SIGKILL) an instance after the bank's
// transfer answered and before the run recorded the tool's step, and lets another
// instance on the same Postgres journal take the run over: the transfer is called again
// under the same idempotency key, so the money moves once, and the run completes.
func TestKilledAfterTheRemoteToolAnswered(t *testing.T) {
	dsn := testenv.PostgresDSN(t, "the kill test of a remote tool")
	if testing.Short() {
		t.Skip("-short: builds and starts processes")
	}
	kb := &keyedBank{calls: map[string]int{}, called: make(chan struct{}, 8)}
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server {
		return bank.NewServer(kb.effect, nil)
	}, &sdk.StreamableHTTPOptions{Stateless: true}))
	defer srv.Close()
	model := openaitest.NewServer(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "bank_transfer", Arguments: `{"to":"bob","amount":50}`}}},
		openaitest.Turn{Text: "Sent 50 to bob."},
	)
	defer model.Close()
	bin := testenv.Build(t, "./testdata/deskapp")
	prefix := "mcpkill_" + testenv.RandomHex(4) + "_"
	env := []string{"DESK_JOURNAL=" + dsn, "DESK_PREFIX=" + prefix, "DESK_MODEL_URL=" + model.URL(), "DESK_BANK_URL=" + srv.URL}
	a := testenv.StartProcess(t, bin, testenv.ProcessOptions{Name: "a", Env: append(env, "DESK_DELAY=30s")})
	testenv.StartProcess(t, bin, testenv.ProcessOptions{Name: "b", Env: env})
	t.Cleanup(func() { dropTables(t, dsn, prefix) })

	answered := make(chan string, 1)
	go func() {
		res, err := http.Post(a.URL+"/desk/chat", "application/json", strings.NewReader(`{"message":"send bob 50"}`))
		if err != nil {
			answered <- err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		answered <- string(b)
	}()
	select {
	case <-kb.called:
	case got := <-answered:
		t.Fatalf("the chat ended before the bank's transfer was called: %s", got)
	case <-time.After(30 * time.Second):
		t.Fatal("the bank's transfer was never called")
	}
	if err := a.Kill(); err != nil { // a holds the answer, unrecorded, for 30 s
		t.Fatal(err)
	}
	select {
	case <-kb.called:
	case <-time.After(60 * time.Second):
		t.Fatal("instance b never took the run over")
	}
	deadline := time.Now().Add(30 * time.Second)
	for model.RequestCount() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the run taken over never reached the model's last turn")
		}
		time.Sleep(20 * time.Millisecond)
	}
	kb.mu.Lock()
	defer kb.mu.Unlock()
	t.Logf("transfer calls by idempotency key: %v; transfers applied: %d", kb.calls, kb.applied)
	if len(kb.calls) != 1 || kb.applied != 1 {
		t.Fatalf("transfer calls by key %v, applied %d: want every call under one key and the money moved once", kb.calls, kb.applied)
	}
	for key, n := range kb.calls {
		if key == "" || n != 2 {
			t.Errorf("key %q called %d times, want 2 (the killed execution and the takeover)", key, n)
		}
	}
}

// dropTables removes the journal tables the processes created under prefix.
func dropTables(t *testing.T, dsn, prefix string) {
	db := testenv.PostgresDB(t, dsn)
	rows, err := db.QueryContext(context.Background(), "SELECT tablename FROM pg_tables WHERE tablename LIKE ?", prefix+"%")
	if err != nil {
		t.Log(err)
		return
	}
	var tables []string
	for rows.Next() {
		var name string
		if rows.Scan(&name) == nil {
			tables = append(tables, name)
		}
	}
	rows.Close()
	for _, name := range tables {
		_, _ = db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+name)
	}
}
