package gate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// User is a user to create with [Auth.EnsureUser].
type User struct {
	Email    string   // the sign-in name, stored trimmed and lowercased
	Password string   // stored only as an argon2id hash
	Tenant   string   // the user's tenant; empty for a tenant of its own (its id)
	Scopes   []string // granted scopes; none may be empty or contain white space
	Operator bool     // an operator of the app (see [engine.Principal])
}

type userRow struct {
	bun.BaseModel `bun:"table:engine_users"`

	ID           string    `bun:"id,pk"`
	Email        string    `bun:"email,notnull,unique"`
	PasswordHash string    `bun:"password_hash,notnull"`
	Tenant       string    `bun:"tenant,notnull"`
	Scopes       string    `bun:"scopes,notnull"` // space separated
	Operator     bool      `bun:"operator,notnull"`
	CreatedAt    time.Time `bun:"created_at,notnull"`
}

func (u *userRow) principal() engine.Principal {
	scopes := strings.Fields(u.Scopes)
	if scopes == nil {
		scopes = []string{}
	}
	return engine.Principal{ID: u.ID, Email: u.Email, Tenant: u.Tenant, Scopes: scopes, Operator: u.Operator}
}

type refreshRow struct {
	bun.BaseModel `bun:"table:engine_refresh_tokens"`

	Hash      string     `bun:"hash,pk"` // hex SHA-256 of the token; the token itself is never stored
	Family    string     `bun:"family,notnull"`
	UserID    string     `bun:"user_id,notnull"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	ExpiresAt time.Time  `bun:"expires_at,notnull"`
	UsedAt    *time.Time `bun:"used_at"`
	Revoked   bool       `bun:"revoked,notnull"`
}

// Migrate creates the auth tables and indexes when missing. [Auth.Option] runs it at
// start; it is safe to run again and from several instances.
func (a *Auth) Migrate(ctx context.Context) error {
	db := a.cfg.DB
	for _, m := range []any{(*userRow)(nil), (*refreshRow)(nil)} {
		if _, err := db.NewCreateTable().Model(m).IfNotExists().Exec(ctx); err != nil {
			return fmt.Errorf("gate: creating auth tables: %w", err)
		}
	}
	for _, ix := range []struct{ name, col string }{
		{"engine_refresh_tokens_family_idx", "family"},
		{"engine_refresh_tokens_user_idx", "user_id"},
	} {
		if _, err := db.NewCreateIndex().Model((*refreshRow)(nil)).Index(ix.name).Column(ix.col).IfNotExists().Exec(ctx); err != nil {
			return fmt.Errorf("gate: creating auth indexes: %w", err)
		}
	}
	return nil
}

// normalEmail lowercases and checks an address; a bad one is a ValidationError.
func normalEmail(email string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(email))
	if len(e) > 254 {
		return "", engine.Invalid(engine.ValidationIssue{Path: "email", Message: "too long"})
	}
	addr, err := mail.ParseAddress(e)
	if err != nil || addr.Address != e {
		return "", engine.Invalid(engine.ValidationIssue{Path: "email", Message: "not an email address"})
	}
	return e, nil
}

// Password length bounds for sign-up; argon2id cost does not depend on length, but a
// megabyte password is not a password.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 1024
)

func checkPassword(pw string) error {
	if len(pw) < MinPasswordLen {
		return engine.Invalid(engine.ValidationIssue{Path: "password", Message: fmt.Sprintf("must be at least %d characters", MinPasswordLen)})
	}
	if len(pw) > MaxPasswordLen {
		return engine.Invalid(engine.ValidationIssue{Path: "password", Message: fmt.Sprintf("must be at most %d characters", MaxPasswordLen)})
	}
	return nil
}

// EnsureUser creates u unless a user with its email exists, and returns the user's id.
// An existing user is left as it is (its password is not reset), so seeding at every
// start is safe. It creates the tables first when needed. Its password hash takes a
// slot of the hashing bound like any other, but waits for one as long as ctx allows
// instead of being turned away.
func (a *Auth) EnsureUser(ctx context.Context, u User) (string, error) {
	if err := a.Migrate(ctx); err != nil {
		return "", err
	}
	email, err := normalEmail(u.Email)
	if err != nil {
		return "", err
	}
	if existing, err := a.userByEmail(ctx, email); err == nil {
		return existing.ID, nil
	} else if !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	row, err := a.createUser(ctx, a.hasher.await, email, u.Password, u.Tenant, u.Scopes, u.Operator)
	if engine.IsCode(err, engine.CodeConflict) {
		// Another instance seeded it between our read and insert.
		existing, err := a.userByEmail(ctx, email)
		if err != nil {
			return "", err
		}
		return existing.ID, nil
	}
	if err != nil {
		return "", err
	}
	return row.ID, nil
}

// createUser checks the password and scopes, hashes the password in a slot taken by
// bounded ([hasher.run] or [hasher.await]) and inserts the user.
func (a *Auth) createUser(ctx context.Context, bounded func(context.Context, func() error) error,
	email, password, tenant string, scopes []string, operator bool) (*userRow, error) {
	if err := checkPassword(password); err != nil {
		return nil, err
	}
	for _, s := range scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n") {
			return nil, fmt.Errorf("gate: bad scope %q", s)
		}
	}
	var hash string
	err := bounded(ctx, func() (err error) {
		hash, err = HashPassword(password, a.cfg.Hash)
		return err
	})
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	row := &userRow{
		ID: id.String(), Email: email, PasswordHash: hash, Tenant: tenant,
		Scopes: strings.Join(scopes, " "), Operator: operator, CreatedAt: a.cfg.Now().UTC(),
	}
	if row.Tenant == "" {
		row.Tenant = row.ID
	}
	res, err := a.cfg.DB.NewInsert().Model(row).On("CONFLICT (email) DO NOTHING").Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("gate: creating user: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, engine.Conflict("the email is already in use")
	}
	return row, nil
}

func (a *Auth) userByEmail(ctx context.Context, email string) (*userRow, error) {
	u := new(userRow)
	err := a.cfg.DB.NewSelect().Model(u).Where("email = ?", email).Limit(1).Scan(ctx)
	return u, err
}

func (a *Auth) userByID(ctx context.Context, id string) (*userRow, error) {
	u := new(userRow)
	err := a.cfg.DB.NewSelect().Model(u).Where("id = ?", id).Limit(1).Scan(ctx)
	return u, err
}

// SignUp creates a user and returns its first token set. A taken email is a Conflict;
// a full hashing bound is Unavailable (see [HashBound]).
func (a *Auth) SignUp(ctx context.Context, email, password string) (TokenSet, error) {
	e, err := normalEmail(email)
	if err != nil {
		return TokenSet{}, err
	}
	if err := checkPassword(password); err != nil {
		return TokenSet{}, err
	}
	var tenant string
	var scopes []string
	if a.cfg.SignUp != nil {
		tenant, scopes, err = a.cfg.SignUp(ctx, e)
		if err != nil {
			return TokenSet{}, err
		}
	}
	u, err := a.createUser(ctx, a.hasher.run, e, password, tenant, scopes, false)
	if err != nil {
		return TokenSet{}, err
	}
	return a.tokenSet(ctx, u, "")
}

// SignIn checks an email and password and returns a new token set (a new refresh-token
// family). An email that is not an address is a ValidationError; any mismatch is
// Unauthorized, and an unknown email costs the same hashing as a wrong password, so
// neither the answer nor its timing tells which it was. An email whose failures are used
// up is RateLimited before any hashing (see [AuthConfig.FailuresPerEmail]), and a full
// hashing bound is Unavailable (see [HashBound]).
func (a *Auth) SignIn(ctx context.Context, email, password string) (TokenSet, error) {
	// A malformed address belongs to no user (every stored one passed this check), and
	// saying so costs no hashing and reveals nothing.
	e, err := normalEmail(email)
	if err != nil {
		return TokenSet{}, err
	}
	key := failureKey(e)
	// Peeked before queueing, so a locked email costs no hashing slot.
	if err := a.failures.locked(ctx, key); err != nil {
		return TokenSet{}, err
	}
	u, err := a.userByEmail(ctx, e)
	known := err == nil
	if !known && !errors.Is(err, sql.ErrNoRows) {
		return TokenSet{}, fmt.Errorf("gate: sign in: %w", err)
	}
	err = a.hasher.run(ctx, func() error {
		// Checked again and counted within the slot, so attempts that queued before
		// the last allowed failure landed are refused now.
		if err := a.failures.admit(ctx, key); err != nil {
			return err
		}
		if !known {
			a.dummyOnce.Do(func() { a.dummy, _ = HashPassword("not a password", a.cfg.Hash) })
			_, _ = VerifyPassword(password, a.dummy)
			return a.failures.fail(ctx, key)
		}
		ok, err := VerifyPassword(password, u.PasswordHash)
		if err != nil {
			return fmt.Errorf("gate: sign in %s: %w", u.ID, err)
		}
		if !ok {
			return a.failures.fail(ctx, key)
		}
		return nil
	})
	if err != nil {
		return TokenSet{}, err
	}
	return a.tokenSet(ctx, u, "")
}
