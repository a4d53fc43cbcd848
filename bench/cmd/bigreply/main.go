// Command bigreply measures one durable agent run whose model sends an oversized reply,
// through the real OpenAI or Anthropic provider, from a local server that writes the
// reply's frames as it goes (so the fake holds no copy of it): the peak heap (sampled
// every 2 ms) and peak RSS of the process, the bytes streamed to the client, and the rows
// and bytes of the run's stored log (memory journal). The reply's text is -bytes long in
// deltas of -piece bytes; a -piece as large as -bytes sends it as one event.
//
//	go run ./bench/cmd/bigreply -vendor openai -bytes 34603008
//	go run ./bench/cmd/bigreply -vendor anthropic -bytes 16777216 -piece 16777216
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/anthropic"
	"github.com/bbc28f59/engine/ai/providers/openai"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

type ChatIn struct {
	Message string `json:"message"`
}

var (
	unit = engine.NewUnit("chat")
	Ask  = engine.DefineStream[ChatIn, agui.Event, agui.RunOutput](unit, "ask", engine.POST("/chat"), engine.Public(), engine.Durable())
)

func fake(vendor string, size int, piece int) http.Handler {
	word := strings.Repeat("x", piece-1) + " "
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		bw := bufio.NewWriterSize(w, 64<<10)
		send := func(event, data string) {
			if event != "" {
				fmt.Fprintf(bw, "event: %s\n", event)
			}
			fmt.Fprintf(bw, "data: %s\n\n", data)
		}
		switch vendor {
		case "openai":
			for sent := 0; sent < size; sent += piece {
				send("", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"`+word+`"},"finish_reason":null}]}`)
			}
			send("", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
			send("", "[DONE]")
		case "anthropic":
			send("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}`)
			send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
			for sent := 0; sent < size; sent += piece {
				send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+word+`"}}`)
			}
			send("content_block_stop", `{"type":"content_block_stop","index":0}`)
			send("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":10}}`)
			send("message_stop", `{"type":"message_stop"}`)
		}
		_ = bw.Flush()
	})
}

func main() {
	vendor := flag.String("vendor", "openai", "openai or anthropic")
	size := flag.Int("bytes", 33<<20, "reply bytes")
	piece := flag.Int("piece", 8, "bytes per delta")
	flag.Parse()
	srv := httptest.NewServer(fake(*vendor, *size, *piece))
	defer srv.Close()
	var prov ai.Provider
	var err error
	if *vendor == "openai" {
		prov, err = openai.New(openai.Options{BaseURL: srv.URL + "/v1", APIKey: "k"})
	} else {
		prov, err = anthropic.New(anthropic.Options{BaseURL: srv.URL})
	}
	if err != nil {
		panic(err)
	}
	agent := ai.Agent("a", ai.Model("m", prov, "m"), ai.ToolNames(), 0)
	j, err := journal.New(memory.New(), journal.Options{})
	if err != nil {
		panic(err)
	}
	app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)), durable.With(j), ai.Install(ai.Options{}),
		engine.BindStream(Ask, func(fx *engine.Fx, in ChatIn, out *engine.Stream[agui.Event]) (agui.RunOutput, error) {
			return ai.Stream(fx, agent, in.Message, out, ai.RunOptions{})
		}))
	if err != nil {
		panic(err)
	}
	if err := app.Start(context.Background()); err != nil {
		panic(err)
	}
	web := httptest.NewServer(app.Handler())
	defer web.Close()
	runtime.GC()
	var peak atomic.Uint64
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	start := time.Now()
	res, err := http.Post(web.URL+"/chat", "application/json", strings.NewReader(`{"message":"hi"}`))
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	took := time.Since(start)
	close(stop)
	<-done
	tail := string(body)
	if len(tail) > 400 {
		tail = tail[len(tail)-400:]
	}
	// The stored log: every row of every stream of the run.
	var stored int
	var rows int
	for _, id := range streamIDs(body) {
		after := int64(0)
		for {
			evs, err := j.ReadEvents(context.Background(), id, after, 1000)
			if err != nil || len(evs) == 0 {
				break
			}
			for _, e := range evs {
				stored += len(e.Event)
				rows++
				after = e.Seq
			}
		}
	}
	hwm := ""
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmHWM") {
				hwm = strings.Join(strings.Fields(l)[1:], " ")
			}
		}
	}
	fmt.Printf("vendor=%s reply=%d status=%d streamed=%d took=%s heap_base=%.1fMiB heap_peak=%.1fMiB rss_hwm=%s log_rows=%d log_bytes=%d\n",
		*vendor, *size, res.StatusCode, len(body), took.Round(time.Millisecond), float64(base)/(1<<20), float64(peak.Load())/(1<<20), hwm, rows, stored)
	fmt.Printf("tail: %q\n", tail)
}

// streamIDs finds the run's stream id in the RUN_STARTED event (the durable run's log is
// keyed by the agent run id).
func streamIDs(body []byte) []string {
	s := string(body)
	i := strings.Index(s, `"runId":"`)
	if i < 0 {
		return nil
	}
	s = s[i+9:]
	return []string{s[:strings.IndexByte(s, '"')]}
}
