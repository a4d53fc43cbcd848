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
	"time"

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
// current scopes. Unknown, expired and revoked tokens are Unauthorized, and so is a token
// that was already used; such a reuse also revokes the token's whole family (a replay,
// or a thief racing the owner), unless it comes within [AuthConfig.RefreshReuseGrace] of
// the rotation, when it is taken for the owner's own race (two tabs refreshing at once)
// and the family, with the tokens the first use got, lives on.
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
		return TokenSet{}, a.reused(ctx, row.Family, *row.UsedAt)
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
	if a.rotateHook != nil {
		a.rotateHook()
	}
	res, err := db.NewUpdate().Model((*refreshRow)(nil)).Set("used_at = ?", now).
		Where("hash = ?", row.Hash).Where("used_at IS NULL").Where("NOT revoked").Exec(ctx)
	if err != nil {
		return TokenSet{}, fmt.Errorf("gate: refresh: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return TokenSet{}, a.lostRace(ctx, row.Hash) // another use of the same token came first
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

// reused answers another use of a refresh token rotated at usedAt: Unauthorized, after
// revoking the token's family unless the use is within the grace of the rotation.
func (a *Auth) reused(ctx context.Context, family string, usedAt time.Time) error {
	grace := a.cfg.RefreshReuseGrace
	if inGrace := grace > 0 && a.cfg.Now().Sub(usedAt) < grace; !inGrace {
		if err := a.revokeFamily(ctx, family); err != nil {
			return err
		}
	}
	return engine.Unauthorized()
}

// lostRace answers a rotation whose token was used or revoked between its read and its
// update: the row is read again for when the winner used it.
func (a *Auth) lostRace(ctx context.Context, hash string) error {
	row := new(refreshRow)
	if err := a.cfg.DB.NewSelect().Model(row).Where("hash = ?", hash).Limit(1).Scan(ctx); err != nil {
		return fmt.Errorf("gate: refresh: %w", err)
	}
	if row.UsedAt == nil { // revoked meanwhile, not used
		return engine.Unauthorized()
	}
	return a.reused(ctx, row.Family, *row.UsedAt)
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
