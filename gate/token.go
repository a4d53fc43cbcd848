package gate

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/vault"
	"github.com/golang-jwt/jwt/v5"
)

// Key is an HS256 signing key. ID is published in the token's kid header so verifiers can
// pick the key; when empty it is derived from the secret (a short SHA-256 fingerprint).
type Key struct {
	ID     string
	Secret vault.Secret
}

// MinKeyBytes is the shortest accepted HS256 key: the hash's output size.
const MinKeyBytes = 32

func (k Key) withID() (Key, error) {
	if len(k.Secret.Reveal()) < MinKeyBytes {
		return k, fmt.Errorf("gate: signing key %q is shorter than %d bytes", k.ID, MinKeyBytes)
	}
	if k.ID == "" {
		sum := sha256.Sum256([]byte(k.Secret.Reveal()))
		k.ID = base64.RawURLEncoding.EncodeToString(sum[:6])
	}
	return k, nil
}

// Keys are the access-token keys: Current signs new tokens; Previous still verify tokens
// signed before a rotation, until they expire. Rotate by moving the current key to the
// front of Previous and installing a new Current; drop it once AccessTTL has passed.
type Keys struct {
	Current  Key
	Previous []Key
}

// claims are the access token's claims: the principal travels in the token so the
// authenticator needs no database lookup per request.
type claims struct {
	Email    string   `json:"email"`
	Tenant   string   `json:"tenant"`
	Scopes   []string `json:"scopes"`
	Operator bool     `json:"op,omitempty"`
	jwt.RegisteredClaims
}

type tokenCodec struct {
	signing Key
	verify  map[string][]byte
	issuer  string
	now     func() time.Time
	parser  *jwt.Parser
	cache   *tokenCache
}

func newTokenCodec(keys Keys, issuer string, now func() time.Time) (*tokenCodec, error) {
	cur, err := keys.Current.withID()
	if err != nil {
		return nil, err
	}
	c := &tokenCodec{cache: newTokenCache(16384), signing: cur, verify: map[string][]byte{cur.ID: []byte(cur.Secret.Reveal())}, issuer: issuer, now: now}
	for _, k := range keys.Previous {
		k, err := k.withID()
		if err != nil {
			return nil, err
		}
		if _, dup := c.verify[k.ID]; dup {
			return nil, fmt.Errorf("gate: two keys share the id %q", k.ID)
		}
		c.verify[k.ID] = []byte(k.Secret.Reveal())
	}
	c.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), // pinned: no "none", no RS/HS confusion
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(issuer),
		jwt.WithTimeFunc(now),
	)
	return c, nil
}

func (c *tokenCodec) issue(p engine.Principal, ttl time.Duration) (string, time.Time, error) {
	now := c.now()
	exp := now.Add(ttl).Truncate(time.Second)
	cl := claims{
		Email: p.Email, Tenant: p.Tenant, Scopes: p.Scopes, Operator: p.Operator,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject: p.ID, Issuer: c.issuer,
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp),
		},
	}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, cl)
	t.Header["kid"] = c.signing.ID
	s, err := t.SignedString([]byte(c.signing.Secret.Reveal()))
	return s, exp, err
}

var errUnknownKey = errors.New("gate: unknown key id")

func (c *tokenCodec) parse(raw string) (*engine.Principal, error) {
	if p, ok := c.cache.get(raw, c.now()); ok {
		return p, nil
	}
	var cl claims
	_, err := c.parser.ParseWithClaims(raw, &cl, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, ok := c.verify[kid]
		if !ok {
			return nil, errUnknownKey
		}
		return k, nil
	})
	if err != nil {
		return nil, err
	}
	if cl.Subject == "" {
		return nil, errors.New("gate: token without subject")
	}
	if cl.Scopes == nil {
		cl.Scopes = []string{}
	}
	p := &engine.Principal{ID: cl.Subject, Email: cl.Email, Tenant: cl.Tenant, Scopes: cl.Scopes, Operator: cl.Operator}
	c.cache.put(raw, p, cl.ExpiresAt.Time)
	return p, nil
}
