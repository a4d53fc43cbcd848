package auth

import "github.com/bbc28f59/engine"

// The common auth codes (the reference contract's AUTH_ERROR_CODES): the gate denials any gated flow
// may answer with, and the declared codes of the auth flows.
const (
	CodeUnauthorized       = engine.CodeUnauthorized
	CodeForbidden          = engine.CodeForbidden
	CodeRateLimited        = engine.CodeRateLimited
	CodeInvalidCredentials = "InvalidCredentials"
	CodeEmailTaken         = "EmailTaken"
	CodeTokenReuse         = "TokenReuse"
	CodeInvalidToken       = "InvalidToken"
	CodeTokenExpired       = "TokenExpired"
)

// AuthErrorCodes lists the codes above, for a UI that sends the user to sign in or
// shows an auth message for any of them.
var AuthErrorCodes = []string{
	CodeUnauthorized, CodeForbidden, CodeRateLimited,
	CodeInvalidCredentials, CodeEmailTaken, CodeTokenReuse, CodeInvalidToken, CodeTokenExpired,
}

// IsAuthError reports whether err carries one of [AuthErrorCodes].
func IsAuthError(err *engine.Error) bool {
	if err == nil {
		return false
	}
	for _, c := range AuthErrorCodes {
		if err.Code == c {
			return true
		}
	}
	return false
}
