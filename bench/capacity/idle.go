package capacity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Idle is the idle end of a target: conversations opened and left waiting for their
// model's first token, held open together.
type Idle struct {
	Wanted  int `json:"wanted"`
	Streams int `json:"streams"` // opened and held at once
	// RSSPerStream and HeapPerStream are the server's growth per open stream: resident
	// memory, and HeapInuse+StackInuse after a GC.
	RSSPerStream  Figure `json:"rssPerStreamBytes"`
	HeapPerStream Figure `json:"heapPerStreamBytes"`
	// Err says why fewer than Wanted opened.
	Err string `json:"error,omitempty"`
}

// idleWait is an idle conversation's wait for its first token: longer than any measurement.
const idleWait = time.Hour

// IdleStreams opens n conversations on ep whose model waits an hour before its first
// token, waits until each has sent its first frame, and reads the server's growth per
// stream. The client side of each is a bare TCP connection holding a hand-written
// request, read until the first frame and then left alone, so the load client stays
// small; it needs an http:// URL. The streams are closed before it returns.
func IdleStreams(ctx context.Context, ep Endpoint, probe Probe, n int) (Idle, error) {
	if err := ep.defaults(); err != nil {
		return Idle{}, err
	}
	u, _ := url.Parse(ep.URL)
	if u.Scheme != "http" {
		return Idle{}, fmt.Errorf("capacity: idle streams need an http:// URL, not %s", ep.URL)
	}
	host := u.Host
	if u.Port() == "" {
		host += ":80"
	}
	p := Pace{Tokens: 1, Rate: 1, FirstToken: float64(idleWait / time.Millisecond)}
	body := ep.body(p, 0)
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n", u.RequestURI(), u.Host, len(body))
	keys := make([]string, 0, len(ep.Header))
	for k := range ep.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range ep.Header[k] {
			fmt.Fprintf(&req, "%s: %s\r\n", k, v)
		}
	}
	req.WriteString("\r\n")
	req.Write(body)

	before, err := probe.Read(ctx, true)
	if err != nil {
		return Idle{}, err
	}
	out := Idle{Wanted: n}
	conns := make([]net.Conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				_ = c.Close()
			}
		}
	}()
	// Eight openers at once: a server that starts runs one at a time still fills in seconds.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	next := 0
	for range 8 {
		wg.Go(func() {
			var d net.Dialer
			buf := make([]byte, 4096)
			for {
				mu.Lock()
				i := next
				next++
				stop := firstErr != nil || i >= n
				mu.Unlock()
				if stop || ctx.Err() != nil {
					return
				}
				c, err := d.DialContext(ctx, "tcp", host)
				if err == nil {
					conns[i] = c
					err = openIdle(c, req.Bytes(), buf)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("idle stream %d: %w", i+1, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Idle{}, err
	}
	for _, c := range conns {
		if c != nil {
			out.Streams++
		}
	}
	if firstErr != nil {
		out.Err = firstErr.Error()
		out.Streams-- // the one that failed holds no stream
	}
	if out.Streams <= 0 {
		return out, errors.New("capacity: no idle stream opened: " + out.Err)
	}
	after, err := probe.Read(ctx, true)
	if err != nil {
		return Idle{}, err
	}
	k := float64(out.Streams)
	out.RSSPerStream = nan(after.HasCPU, (float64(after.RSS)-float64(before.RSS))/k)
	out.HeapPerStream = nan(after.HasHeap, (float64(after.Heap)-float64(before.Heap))/k)
	return out, nil
}

// openIdle sends the request on c and reads until the first frame has arrived.
func openIdle(c net.Conn, req, buf []byte) error {
	if _, err := c.Write(req); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	defer c.SetReadDeadline(time.Time{})
	var got []byte
	for !bytes.Contains(got, []byte("\ndata:")) && !bytes.Contains(got, []byte("\r\ndata:")) {
		k, err := c.Read(buf)
		if err != nil {
			return fmt.Errorf("%w after %q", err, got)
		}
		got = append(got, buf[:k]...)
		if len(got) >= 12 && !strings.HasPrefix(string(got), "HTTP/1.1 200") {
			return fmt.Errorf("unexpected reply %.200q", got)
		}
	}
	return nil
}

// String is the count held, with the count wanted when fewer opened.
func (i Idle) String() string {
	if i.Streams == i.Wanted {
		return strconv.Itoa(i.Streams)
	}
	return fmt.Sprintf("%d of %d", i.Streams, i.Wanted)
}
