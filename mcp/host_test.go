package mcp

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"testing"
)

// request returns a request that arrived on local with Host and Origin as given.
func request(local, host, origin string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, "http://placeholder/_engine/mcp", nil)
	r.Host = host
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	addr, _ := net.ResolveTCPAddr("tcp", local)
	return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(addr)))
}

func TestCheckHost(t *testing.T) {
	t.Parallel()
	s := &server{opts: Options{AllowedHosts: []string{"mcp.example.test"}}}
	for _, c := range []struct {
		local, host, origin string
		ok                  bool
	}{
		{"127.0.0.1:80", "127.0.0.1:80", "", true},
		{"127.0.0.1:80", "localhost:80", "http://localhost:80", true},
		{"[::1]:80", "[::1]:80", "http://[::1]:80", true},
		{"127.0.0.1:80", "LOCALHOST", "", true},
		{"127.0.0.1:80", "mcp.example.test:80", "https://mcp.example.test", true},
		{"127.0.0.1:80", "evil.example.com", "", false},
		{"127.0.0.1:80", "127.0.0.1:80", "http://evil.example.com", false},
		{"127.0.0.1:80", "127.0.0.1.evil.example.com", "", false},
		{"127.0.0.1:80", "127.0.0.1:80", "null", false},
		{"10.0.0.5:80", "evil.example.com", "http://evil.example.com", true}, // not a loopback listener
	} {
		err := s.checkHost(request(c.local, c.host, c.origin))
		if (err == nil) != c.ok {
			t.Errorf("local %s Host %q Origin %q: %v, want accepted %v", c.local, c.host, c.origin, err, c.ok)
		}
	}
}

// FuzzCheckHost holds the rebinding check to its promise for any Host and Origin: on a
// loopback listener, an accepted request names only loopback or allowed hosts.
func FuzzCheckHost(f *testing.F) {
	for _, seed := range [][2]string{{"127.0.0.1:1", ""}, {"evil.example.com", "http://evil.example.com"},
		{"[::1]", "http://[::1]"}, {"localhost", "http://localhost:1/x"}, {"[::1", "http://[::"}, {"", "%zz"}} {
		f.Add(seed[0], seed[1])
	}
	s := &server{opts: Options{AllowedHosts: []string{"mcp.example.test"}}}
	f.Fuzz(func(t *testing.T, host, origin string) {
		if s.checkHost(request("127.0.0.1:80", host, origin)) != nil {
			return
		}
		if !s.allowed(hostOf(host)) {
			t.Fatalf("Host %q accepted", host)
		}
		if origin != "" {
			u, err := url.Parse(origin)
			if err != nil || !s.allowed(u.Hostname()) {
				t.Fatalf("Origin %q accepted", origin)
			}
		}
	})
}
