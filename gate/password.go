package gate

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// HashParams are the argon2id parameters of new password hashes. Stored hashes carry their
// own parameters (PHC string format), so raising them later needs no migration: old
// hashes still verify, new ones use the new cost.
type HashParams struct {
	Memory  uint32 // KiB
	Time    uint32 // passes
	Threads uint8  // lanes
	SaltLen uint32 // bytes
	KeyLen  uint32 // bytes
}

// DefaultHashParams follow the OWASP password storage recommendation for argon2id
// (19 MiB, 2 passes, 1 lane): about 20–40 ms per hash on one server core.
var DefaultHashParams = HashParams{Memory: 19 * 1024, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}

// FastHashParams are cheap parameters for tests only; never use them in production.
var FastHashParams = HashParams{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}

func (p HashParams) validate() error {
	if p.Memory < 8*uint32(p.Threads) || p.Time < 1 || p.Threads < 1 || p.SaltLen < 8 || p.KeyLen < 16 {
		return fmt.Errorf("gate: weak or invalid argon2id parameters %+v", p)
	}
	return nil
}

var b64 = base64.RawStdEncoding

// HashPassword returns the PHC string of password under p:
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<hash> (unpadded base64).
func HashPassword(password string, p HashParams) (string, error) {
	if err := p.validate(); err != nil {
		return "", err
	}
	salt := make([]byte, p.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, p.KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

var errBadHash = errors.New("gate: malformed password hash")

// VerifyPassword reports whether password matches the PHC string, comparing in constant
// time. A malformed hash is an error, never a match.
func VerifyPassword(password, phc string) (bool, error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var p HashParams
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return false, errBadHash
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, errBadHash
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) < 16 || p.Time < 1 || p.Threads < 1 || p.Memory < 8*uint32(p.Threads) {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
