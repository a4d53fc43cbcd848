package gate_test

import (
	"strings"
	"testing"

	"github.com/bbc28f59/engine/gate"
)

func TestPasswordHash(t *testing.T) {
	t.Parallel()
	h, err := gate.HashPassword("s3cret password", gate.FastHashParams)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hash = %s", h)
	}
	h2, _ := gate.HashPassword("s3cret password", gate.FastHashParams)
	if h == h2 {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	for _, tc := range []struct {
		pw   string
		want bool
	}{{"s3cret password", true}, {"s3cret passwore", false}, {"", false}} {
		ok, err := gate.VerifyPassword(tc.pw, h)
		if err != nil || ok != tc.want {
			t.Errorf("verify %q = %v %v", tc.pw, ok, err)
		}
	}
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=19$m=0,t=0,p=0$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", "$argon2id$v=19$m=64,t=1,p=1$!!$!!"} {
		if ok, err := gate.VerifyPassword("x", bad); ok || err == nil {
			t.Errorf("malformed %q: %v %v", bad, ok, err)
		}
	}
	if _, err := gate.HashPassword("x", gate.HashParams{Memory: 1, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}); err == nil {
		t.Error("weak parameters accepted")
	}
}
