package ai_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// downDriver is storage whose reads fail while down is set, as a database does while it
// restarts.
type downDriver struct {
	journal.Driver
	down atomic.Bool
}

var errDown = errors.New("connection refused")

func (d *downDriver) GetRun(ctx context.Context, id string) (journal.RunRecord, error) {
	if d.down.Load() {
		return journal.RunRecord{}, errDown
	}
	return d.Driver.GetRun(ctx, id)
}

func (d *downDriver) ReadStream(ctx context.Context, id string, after int64, limit int) (journal.Stream, []journal.EventRow, error) {
	if d.down.Load() {
		return journal.Stream{}, nil, errDown
	}
	return d.Driver.ReadStream(ctx, id, after, limit)
}

// While the database is away, the approval and follow routes answer 500, which clients
// retry, never 404, which tells them to give up on a run that exists.
func TestADatabaseOutageIsNotANotFound(t *testing.T) {
	d := &downDriver{Driver: memory.New()}
	e := newApEnv(t, apConfig{driver: d, turns: []openaitest.Turn{
		{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "bank_transfer", Arguments: `{"to":"bob","amount":500}`}}},
		{Text: "Sent."},
	}})
	_, events := e.chat(t, "/desk/chat", apAlice, "send bob 500")
	stream := apRunID(t, events)
	id := events[len(events)-1].(agui.RunFinished).Outcome.Interrupts[0].ID

	d.down.Store(true)
	if dec := e.decide(t, "approve", apAlice, apApproveBody(id, "")); dec.status != http.StatusInternalServerError || dec.code() != "InternalError" {
		t.Fatalf("approve while the database is away: %d %s, want 500 InternalError", dec.status, dec.raw)
	}
	if res, raw := e.follow(t, stream, apAlice, nil, ""); res.StatusCode != http.StatusInternalServerError {
		t.Fatalf("follow while the database is away: %d %s, want 500", res.StatusCode, raw)
	}
	d.down.Store(false)
	if dec := e.decide(t, "approve", apAlice, apApproveBody(id, "")); dec.status != http.StatusOK {
		t.Fatalf("approve once it is back: %d %s", dec.status, dec.raw)
	}
	frames, _ := e.followFrames(t, stream, 0)
	if fin, ok := frames[len(frames)-1].Event.(agui.RunFinished); !ok || fin.Outcome != nil {
		t.Fatalf("the run did not complete after the retried approval: %v", eventTypes(frames))
	}
}
