// Package vault holds server-side secrets (signing keys, API keys) for handlers and gates.
// Secrets come from a pluggable [Source] (the environment, a directory of files, a map in
// tests, or a [Chain] of them) and are handed out as [Secret] values that redact
// themselves wherever they could leak: fmt verbs, slog, JSON and text encoding. The only
// way to read one is the explicit [Secret.Reveal], so a reviewer can grep for every use.
//
// A vault is an app-level value ([With], read back with [Of] or [FromApp]); it is never
// part of the descriptor, envelopes or the client, because nothing in it is a flow.
package vault

import (
	"fmt"
	"log/slog"
)

// Redacted is what a [Secret] prints, logs and encodes as.
const Redacted = "[REDACTED]"

// Secret is a secret value that does not leak by accident: String, GoString, every fmt
// verb, slog and JSON/text encoding show [Redacted]. Use [Secret.Reveal] where the value
// is genuinely needed (signing a token, calling a provider).
type Secret struct {
	v string
}

// NewSecret wraps a value, for sources and tests.
func NewSecret(value string) Secret { return Secret{v: value} }

// Reveal returns the secret value. Keep the result out of logs and replies.
func (s Secret) Reveal() string { return s.v }

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.v == "" }

// String redacts the secret so %s, %v and string concatenation through fmt never show it.
func (s Secret) String() string { return Redacted }

// GoString redacts the secret for %#v.
func (s Secret) GoString() string { return "vault.Secret(" + Redacted + ")" }

// Format redacts the secret for every fmt verb, including %x and %q, which would
// otherwise format the underlying struct.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(s.GoString()))
		return
	}
	_, _ = f.Write([]byte(Redacted))
}

// LogValue redacts the secret in structured logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }

// MarshalJSON redacts the secret, so a struct carrying one cannot be sent by mistake.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText redacts the secret in text encodings (and map keys).
func (s Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }
