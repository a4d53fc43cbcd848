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
	ID     string       // the kid header of tokens it signs (default a fingerprint of Secret)
	Secret vault.Secret // at least [MinKeyBytes] long
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
	Current  Key   // signs new tokens and verifies them
	Previous []Key // only verify, so tokens signed before a rotation live out their time
}

// claims are the access token's claims: the principal travels in the token so the
// authenticator needs no database lookup per request. Every field has one JSON type and
// anything else fails decoding: jwt.RegisteredClaims would read "exp":"4102444800" as a
// date, which none of our tokens contain and a forged or mangled one might.
type claims struct {
	Subject   string           `json:"sub"`
	Issuer    string           `json:"iss"`
	Audience  jwt.ClaimStrings `json:"aud"`
	ExpiresAt numericDate      `json:"exp"`
	IssuedAt  numericDate      `json:"iat"`
	NotBefore numericDate      `json:"nbf,omitzero"`
	Email     string           `json:"email"`
	Tenant    string           `json:"tenant"`
	Scopes    []string         `json:"scopes"`
	Operator  bool             `json:"op,omitempty"`
}

// The jwt.Claims methods, through which the parser checks the registered claims.
func (c *claims) GetExpirationTime() (*jwt.NumericDate, error) { return c.ExpiresAt.d, nil }
func (c *claims) GetIssuedAt() (*jwt.NumericDate, error)       { return c.IssuedAt.d, nil }
func (c *claims) GetNotBefore() (*jwt.NumericDate, error)      { return c.NotBefore.d, nil }
func (c *claims) GetIssuer() (string, error)                   { return c.Issuer, nil }
func (c *claims) GetSubject() (string, error)                  { return c.Subject, nil }
func (c *claims) GetAudience() (jwt.ClaimStrings, error)       { return c.Audience, nil }

// numericDate is a JWT NumericDate that only a JSON number can set: a string, bool,
// object or null in exp, iat or nbf fails the token instead of being read as a date or
// as absent.
type numericDate struct{ d *jwt.NumericDate }

func dateOf(t time.Time) numericDate { return numericDate{jwt.NewNumericDate(t)} }

// UnmarshalJSON implements json.Unmarshaler. The decoder has already checked that b is
// one JSON value, so a leading digit or minus sign makes it a number.
func (n *numericDate) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || (b[0] != '-' && (b[0] < '0' || b[0] > '9')) {
		return fmt.Errorf("gate: date claim %.20s is not a JSON number", b)
	}
	d := new(jwt.NumericDate)
	if err := d.UnmarshalJSON(b); err != nil {
		return err
	}
	n.d = d
	return nil
}

// MarshalJSON implements json.Marshaler.
func (n numericDate) MarshalJSON() ([]byte, error) { return n.d.MarshalJSON() }

// IsZero lets omitzero leave out an unset date.
func (n numericDate) IsZero() bool { return n.d == nil }

type tokenCodec struct {
	signing  Key
	verify   map[string][]byte
	issuer   string
	audience string
	now      func() time.Time
	parser   *jwt.Parser
	cache    *tokenCache
}

func newTokenCodec(keys Keys, issuer, audience string, now func() time.Time) (*tokenCodec, error) {
	cur, err := keys.Current.withID()
	if err != nil {
		return nil, err
	}
	c := &tokenCodec{
		cache: newTokenCache(16384), signing: cur, verify: map[string][]byte{cur.ID: []byte(cur.Secret.Reveal())},
		issuer: issuer, audience: audience, now: now,
	}
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
		jwt.WithAudience(audience),
		jwt.WithStrictDecoding(),
		jwt.WithTimeFunc(now),
	)
	return c, nil
}

func (c *tokenCodec) issue(p engine.Principal, ttl time.Duration) (string, time.Time, error) {
	now := c.now()
	exp := now.Add(ttl).Truncate(time.Second)
	cl := claims{
		Subject: p.ID, Issuer: c.issuer, Audience: jwt.ClaimStrings{c.audience},
		IssuedAt: dateOf(now), ExpiresAt: dateOf(exp),
		Email: p.Email, Tenant: p.Tenant, Scopes: p.Scopes, Operator: p.Operator,
	}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, &cl)
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
	// The parser refused a token used before its iat or nbf; so does the cache.
	from := cl.IssuedAt.time()
	if nbf := cl.NotBefore.time(); nbf.After(from) {
		from = nbf
	}
	c.cache.put(raw, p, from, cl.ExpiresAt.time())
	return p, nil
}

// time is the date, or the zero time when the claim was absent.
func (n numericDate) time() time.Time {
	if n.d == nil {
		return time.Time{}
	}
	return n.d.Time
}
