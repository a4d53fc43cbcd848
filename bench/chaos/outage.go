package chaos

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"time"
)

// outage makes the database unreachable for the instances for a while, then reachable
// again: on Postgres by cutting the proxy, on SQLite by holding the write lock past the
// instances' busy timeout (5s).
func (h *harness) outage(ctx context.Context) error {
	if h.dbProxy != nil {
		h.dbProxy.cut(h.randDur(300*time.Millisecond, 1500*time.Millisecond))
		return nil
	}
	conn, err := h.store.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("chaos: taking SQLite's write lock: %w", err)
	}
	sleep(ctx, h.randDur(5500*time.Millisecond, 6500*time.Millisecond))
	_, err = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	return err
}

// dbProxy is a TCP proxy to the Postgres server that can be cut.
type dbProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
}

// newDBProxy starts a proxy to dsn's server and returns dsn rewritten to go through it.
func newDBProxy(dsn string) (*dbProxy, string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	p := &dbProxy{ln: ln, target: u.Host, conns: map[net.Conn]bool{}}
	go p.serve()
	u.Host = ln.Addr().String()
	return p, u.String(), nil
}

func (p *dbProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

func (p *dbProxy) pipe(c net.Conn) {
	p.mu.Lock()
	down := p.down
	p.mu.Unlock()
	if down {
		_ = c.Close()
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		_ = c.Close()
		_ = s.Close()
		return
	}
	p.conns[c], p.conns[s] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = s.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// cut closes every connection and refuses new ones for d.
func (p *dbProxy) cut(d time.Duration) {
	p.mu.Lock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	time.Sleep(d)
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

func (p *dbProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}
