package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// MinSecretLen is the shortest HS256 secret JWT accepts (RFC 7518 §3.2:
// at least the hash size).
const MinSecretLen = 32

// ErrWeakSecret is returned for a secret shorter than MinSecretLen.
var ErrWeakSecret = fmt.Errorf("auth: jwt secret shorter than %d bytes: set AUTH_JWT_SECRET to a longer random value", MinSecretLen)

// JWT authenticates "Authorization: Bearer <token>" headers carrying HS256
// tokens. Any other algorithm (none, RS256, HS512, ...) is rejected, "sub"
// and "exp" are required and "roles" is an optional list of strings.
// Build it with NewJWT; it is safe for concurrent use.
type JWT struct {
	secret []byte
	leeway time.Duration
	now    func() time.Time
	policy JWTPolicy
}

// JWTPolicy adds checks beyond signature, "exp" and "sub". The zero value
// adds none except the always-on ones: an "iat" in the future beyond the
// leeway and any "crit" header (no extension is understood) are refused.
type JWTPolicy struct {
	// Issuer, when set, must equal the token's "iss".
	Issuer string
	// Audience, when set, must be one of the token's "aud".
	Audience string
	// MaxLifetime, when positive, caps "exp" minus "iat" (or minus now when
	// the token has no "iat").
	MaxLifetime time.Duration
}

// WithPolicy returns a copy of j that also enforces p.
func (j *JWT) WithPolicy(p JWTPolicy) *JWT {
	cp := *j
	cp.policy = p
	return &cp
}

var _ Authenticator = (*JWT)(nil)

// NewJWT returns a JWT adapter. leeway tolerates clock skew on "exp" and
// "nbf"; now is the clock (nil: time.Now).
func NewJWT(secret []byte, leeway time.Duration, now func() time.Time) (*JWT, error) {
	if len(secret) < MinSecretLen {
		return nil, ErrWeakSecret
	}
	if now == nil {
		now = time.Now
	}
	return &JWT{secret: secret, leeway: leeway, now: now}, nil
}

// claims is the token body.
type claims struct {
	Roles []string `json:"roles,omitempty"`
	jwt.RegisteredClaims
}

// Authenticate implements Authenticator.
func (j *JWT) Authenticate(_ context.Context, r *http.Request) (Principal, error) {
	raw, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return Principal{}, fmt.Errorf("%w: no bearer token in the authorization header", ErrUnauthenticated)
	}
	var c claims
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(), // an iat in the future beyond the leeway is refused
		jwt.WithLeeway(j.leeway),
		jwt.WithTimeFunc(j.now),
	}
	if j.policy.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(j.policy.Issuer))
	}
	if j.policy.Audience != "" {
		opts = append(opts, jwt.WithAudience(j.policy.Audience))
	}
	tok, err := jwt.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return j.secret, nil }, opts...)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	if _, ok := tok.Header["crit"]; ok {
		// RFC 7515 §4.1.11: a recipient must refuse extensions it does not
		// understand, and this one understands none.
		return Principal{}, fmt.Errorf("%w: token has a crit header", ErrUnauthenticated)
	}
	if max := j.policy.MaxLifetime; max > 0 {
		from := j.now()
		if c.IssuedAt != nil {
			from = c.IssuedAt.Time
		}
		if c.ExpiresAt.Sub(from) > max+j.leeway {
			return Principal{}, fmt.Errorf("%w: token lifetime exceeds %s", ErrUnauthenticated, max)
		}
	}
	if c.Subject == "" {
		return Principal{}, fmt.Errorf("%w: token has no subject", ErrUnauthenticated)
	}
	if err := ValidateSubject(c.Subject); err != nil {
		return Principal{}, err
	}
	return Principal{Subject: c.Subject, Roles: c.Roles}, nil
}

// bearer extracts the token of a "Bearer" authorization header; the
// scheme is case-insensitive (RFC 9110 §11.1).
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	tok = strings.TrimSpace(tok)
	return tok, ok && strings.EqualFold(scheme, "Bearer") && tok != ""
}

// IssueToken signs an HS256 token for sub with roles, valid from now for
// ttl. It backs the API's `token` dev subcommand and tests.
func IssueToken(secret []byte, sub string, roles []string, ttl time.Duration, now time.Time) (string, error) {
	if len(secret) < MinSecretLen {
		return "", ErrWeakSecret
	}
	if sub == "" || ttl <= 0 {
		return "", errors.New("auth: issue token: subject must be set and ttl positive")
	}
	if err := ValidateSubject(sub); err != nil {
		return "", fmt.Errorf("auth: issue token: %w", err)
	}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, claims{
		Roles: roles,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   sub,
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
	})
	s, err := t.SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("auth: sign token: %w", err)
	}
	return s, nil
}
