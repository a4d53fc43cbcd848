package gate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/bbc28f59/engine"
	"github.com/google/uuid"
)

// refreshBytes is the entropy of a refresh token.
const refreshBytes = 32

func hashRefresh(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// newRefresh stores the hash of a fresh refresh token in family (a new family when
// empty) and returns the token.
func (a *Auth) newRefresh(ctx context.Context, userID, family string) (string, error) {
	b := make([]byte, refreshBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok := base64.RawURLEncoding.EncodeToString(b)
	if family == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return "", err
		}
		family = id.String()
	}
	now := a.cfg.Now().UTC()
	row := &refreshRow{Hash: hashRefresh(tok), Family: family, UserID: userID, CreatedAt: now, ExpiresAt: now.Add(a.cfg.RefreshTTL)}
	if _, err := a.cfg.DB.NewInsert().Model(row).Exec(ctx); err != nil {
		return "", fmt.Errorf("gate: storing refresh token: %w", err)
	}
	return tok, nil
}

// Rotate exchanges a refresh token for a new token set: the token is marked used and a
// new one of the same family is issued, with an access token carrying the user's
// current scopes. A token that was already used (a replay, or a thief racing the owner)
// revokes its whole family; unknown, expired and revoked tokens are Unauthorized.
func (a *Auth) Rotate(ctx context.Context, token string) (TokenSet, error) {
	db := a.cfg.DB
	row := new(refreshRow)
	err := db.NewSelect().Model(row).Where("hash = ?", hashRefresh(token)).Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return TokenSet{}, engine.Unauthorized()
	}
	if err != nil {
		return TokenSet{}, fmt.Errorf("gate: refresh: %w", err)
	}
	if row.UsedAt != nil {
		return TokenSet{}, a.reused(ctx, row)
	}
	// A family revoked while this token was being issued (two rotations racing a
	// replay) still has its older rows revoked; honour that.
	revoked, err := db.NewSelect().Model((*refreshRow)(nil)).Where("family = ?", row.Family).Where("revoked").Exists(ctx)
	if err != nil {
		return TokenSet{}, fmt.Errorf("gate: refresh: %w", err)
	}
	now := a.cfg.Now().UTC()
	if revoked || row.Revoked || !now.Before(row.ExpiresAt) {
		return TokenSet{}, engine.Unauthorized()
	}
	res, err := db.NewUpdate().Model((*refreshRow)(nil)).Set("used_at = ?", now).
		Where("hash = ?", row.Hash).Where("used_at IS NULL").Where("NOT revoked").Exec(ctx)
	if err != nil {
		return TokenSet{}, fmt.Errorf("gate: refresh: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return TokenSet{}, a.reused(ctx, row) // lost a race with another use of the same token
	}
	u, err := a.userByID(ctx, row.UserID)
	if errors.Is(err, sql.ErrNoRows) {
		return TokenSet{}, engine.Unauthorized()
	}
	if err != nil {
		return TokenSet{}, fmt.Errorf("gate: refresh: %w", err)
	}
	return a.tokenSet(ctx, u, row.Family)
}

// reused revokes the family of a replayed refresh token and answers Unauthorized.
func (a *Auth) reused(ctx context.Context, row *refreshRow) error {
	if err := a.revokeFamily(ctx, row.Family); err != nil {
		return err
	}
	return engine.Unauthorized()
}

func (a *Auth) revokeFamily(ctx context.Context, family string) error {
	_, err := a.cfg.DB.NewUpdate().Model((*refreshRow)(nil)).Set("revoked = ?", true).Where("family = ?", family).Exec(ctx)
	if err != nil {
		return fmt.Errorf("gate: revoking refresh tokens: %w", err)
	}
	return nil
}

// signOut revokes the family of token, which must belong to p, or every family of p
// when token is empty. Access tokens already issued stay valid until they expire.
func (a *Auth) signOut(ctx context.Context, p *engine.Principal, token string) error {
	if p == nil {
		return engine.Unauthorized()
	}
	if token == "" {
		_, err := a.cfg.DB.NewUpdate().Model((*refreshRow)(nil)).Set("revoked = ?", true).Where("user_id = ?", p.ID).Exec(ctx)
		if err != nil {
			return fmt.Errorf("gate: sign out: %w", err)
		}
		return nil
	}
	row := new(refreshRow)
	err := a.cfg.DB.NewSelect().Model(row).Where("hash = ?", hashRefresh(token)).Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && row.UserID != p.ID) {
		return nil // nothing of the caller's to end; say nothing about other users' tokens
	}
	if err != nil {
		return fmt.Errorf("gate: sign out: %w", err)
	}
	return a.revokeFamily(ctx, row.Family)
}
