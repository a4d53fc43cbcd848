package gate

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// IPSource says where a request's client IP comes from. The choice is explicit because
// the right answer depends on the deployment: behind a proxy RemoteAddr is the proxy,
// and without one a forwarding header is whatever the caller typed.
type IPSource interface {
	// ClientIP returns the client IP of r, or an error when r carries none it can
	// vouch for.
	ClientIP(r *http.Request) (netip.Addr, error)
}

// RemoteAddr takes the client IP from the TCP peer address: the only source a caller
// cannot forge, and the default of [ByClientIP].
var RemoteAddr IPSource = remoteAddr{}

type remoteAddr struct{}

func (remoteAddr) ClientIP(r *http.Request) (netip.Addr, error) { return peerAddr(r) }

func peerAddr(r *http.Request) (netip.Addr, error) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("gate: no client IP in remote address %q", r.RemoteAddr)
	}
	return a.Unmap().WithZone(""), nil
}

// TrustedProxy reads the client IP from header (X-Forwarded-For, X-Real-IP, or a CDN's
// header), but only when the TCP peer is inside one of the trusted proxy ranges;
// requests from anywhere else are keyed by their peer address, so a direct caller cannot
// choose its own key. With X-Forwarded-For the address list is walked from the right,
// skipping trusted proxies, and the first untrusted address is the client.
func TrustedProxy(header string, trusted ...netip.Prefix) (IPSource, error) {
	header = http.CanonicalHeaderKey(strings.TrimSpace(header))
	if header == "" {
		return nil, errors.New("gate.TrustedProxy: empty header name")
	}
	if len(trusted) == 0 {
		return nil, errors.New("gate.TrustedProxy: no trusted proxy range; use gate.RemoteAddr")
	}
	for _, p := range trusted {
		if !p.IsValid() {
			return nil, errors.New("gate.TrustedProxy: invalid prefix")
		}
	}
	return trustedProxy{header: header, trusted: append([]netip.Prefix(nil), trusted...)}, nil
}

type trustedProxy struct {
	header  string
	trusted []netip.Prefix
}

func (t trustedProxy) isTrusted(a netip.Addr) bool {
	for _, p := range t.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (t trustedProxy) ClientIP(r *http.Request) (netip.Addr, error) {
	peer, err := peerAddr(r)
	if err != nil || !t.isTrusted(peer) {
		return peer, err
	}
	vals := r.Header.Values(t.header)
	if len(vals) == 0 {
		return peer, nil
	}
	// Join repeated headers in order, then walk from the nearest hop outwards.
	var hops []string
	for _, v := range vals {
		hops = append(hops, strings.Split(v, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			// A malformed hop was written by someone we do not trust; stop at the
			// last address we could vouch for.
			return client, nil
		}
		a = a.Unmap().WithZone("")
		client = a
		if !t.isTrusted(a) {
			return a, nil
		}
	}
	return client, nil
}
