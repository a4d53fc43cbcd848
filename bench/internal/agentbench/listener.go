package agentbench

import (
	"net"
	"sync/atomic"
)

// countingListener counts the writes the server makes on its connections: with the SSE
// writer's coalescing, one write is one flush, so writes per frame show how well a
// stream's frames were batched into syscalls.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, writes: l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}
