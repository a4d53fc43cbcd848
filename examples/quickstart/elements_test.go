package main

import (
	"testing"
	"time"

	"github.com/bbc28f59/engine/clientx"
)

// The quickstart's order parks until paid, and its board keeps what was posted.
func TestQuickstartElements(t *testing.T) {
	srv := serve(t, "")
	c, err := clientx.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	placed := clientx.Call(ctx, c, Place, "tea")
	if !placed.Meta.Parked {
		t.Fatalf("orders.place: %+v %v", placed.Meta, placed.Error)
	}
	if r := clientx.Call(ctx, c, Pay, placed.Meta.RunID); r.Error != nil {
		t.Fatalf("orders.pay: %v", r.Error)
	}
	var st clientx.RunState
	for deadline := time.Now().Add(10 * time.Second); !st.Final() && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		st = clientx.GetRun(ctx, c, placed.Meta.RunID).Data
	}
	if st.Status != "completed" || string(st.Result) != `"tea paid by the quickstart"` {
		t.Fatalf("the order: %+v (%s)", st, st.Result)
	}
	for _, text := range []string{"one", "two"} {
		if r := clientx.Call(ctx, c, Post, text); r.Error != nil {
			t.Fatalf("board.post: %v", r.Error)
		}
	}
	read := clientx.Call(ctx, c, Read, 1)
	if read.Error != nil || len(read.Data) != 1 || read.Data[0].Seq != 2 || read.Data[0].Value != "two" {
		t.Fatalf("board.read after 1: %+v %v", read.Data, read.Error)
	}
}
