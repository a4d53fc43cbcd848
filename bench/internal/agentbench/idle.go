package agentbench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"time"
)

// IdleMemory opens n streams of target t that stay open without sending (an agent run
// whose model waits [IdleWait] before its first chunk, or the raw handler that blocks),
// and returns the growth of HeapInuse+StackInuse per open stream, measured after a GC
// before the first stream opens and after the last one has delivered its opening frames.
//
// The client side is a bare TCP connection holding a hand-written request, read until the
// opening frames arrived and then left alone: no client goroutine, no buffer kept, so the
// figure is close to the server's cost. Both targets pay the same loopback connection.
// The streams are closed before IdleMemory returns, and it waits for the server to let
// them go so the next measurement starts clean.
func (e *Env) IdleMemory(ctx context.Context, t Target, n int) (Idle, error) {
	if n <= 0 {
		return Idle{}, fmt.Errorf("agentbench: IdleMemory needs at least one stream")
	}
	host := strings.TrimPrefix(e.URL, "http://")
	body := `{"message":"wait"}`
	req := "POST " + t.idlePath() + " HTTP/1.1\r\nHost: " + host +
		"\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
	goroutines := runtime.NumGoroutine()
	before := inUse()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
		settle(ctx, goroutines)
	}()
	buf := make([]byte, 4096)
	var d net.Dialer
	for range n {
		c, err := d.DialContext(ctx, "tcp", host)
		if err != nil {
			return Idle{}, err
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte(req)); err != nil {
			return Idle{}, err
		}
		if err := awaitFrames(c, buf, len(e.idle)); err != nil {
			return Idle{}, fmt.Errorf("agentbench: idle %s stream: %w", t, err)
		}
	}
	after := inUse()
	if e.WhileIdle != nil {
		e.WhileIdle(t)
	}
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	return Idle{Heap: per(after.heap, before.heap), Stack: per(after.stack, before.stack), Live: per(after.live, before.live)}, nil
}

// Idle is the memory one open idle stream holds, in bytes.
type Idle struct {
	Heap  float64 // HeapInuse growth per stream
	Stack float64 // StackInuse growth per stream (goroutine stacks)
	// Live is the HeapAlloc growth per stream: the bytes of the objects the stream keeps.
	// Heap minus Live is room in the heap's spans that its objects keep from reuse
	// (fragmentation), which grows with the garbage allocated alongside them.
	Live float64
}

// Total is heap plus stack.
func (i Idle) Total() float64 { return i.Heap + i.Stack }

// awaitFrames reads from c until want data frames have arrived.
func awaitFrames(c net.Conn, buf []byte, want int) error {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	seen, got := 0, []byte(nil)
	for seen < want {
		k, err := c.Read(buf)
		if err != nil {
			return fmt.Errorf("after %d of %d frames: %w (%q)", seen, want, err, got)
		}
		got = append(got, buf[:k]...)
		seen = bytes.Count(got, []byte("data: "))
		if bytes.HasPrefix(got, []byte("HTTP/1.1 ")) && !bytes.HasPrefix(got, []byte("HTTP/1.1 200")) {
			return fmt.Errorf("unexpected reply %q", got)
		}
	}
	return nil
}

type memInUse struct{ heap, stack, live uint64 }

// inUse is the heap and stack memory in use, and the bytes of live heap objects, after a
// full collection.
func inUse() memInUse {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memInUse{heap: m.HeapInuse, stack: m.StackInuse, live: m.HeapAlloc}
}

// settle waits, up to a deadline, for the goroutine count to fall back to base (the
// server's handlers of closed streams returning).
func settle(ctx context.Context, base int) {
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base+2 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
}
