// Package auth verifies the JWT bearer tokens of docs/api/operations.md §6: the key
// sources and algorithms, the claim checks, the roles, and the exact answers
// a rejected request receives. It knows nothing about routes; the HTTP layer
// asks it for an Identity and compares the Access with the route's level.
package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queen-go/queen/internal/tenant"
)

// Verifier checks tokens against one configuration. It is safe for
// concurrent use; the only mutable state is the JWKS cache.
type Verifier struct {
	cfg    Config
	secret []byte // HS256 key; nil when JWT_SECRET is empty
	pemKey any    // *rsa.PublicKey or ed25519.PublicKey from JWT_PUBLIC_KEY
	jwks   *jwksCache
	parser *jwt.Parser
	now    func() time.Time // replaced in tests
}

// New checks the configuration and returns a verifier. It fails when the
// chosen algorithm has no usable key source, so the broker refuses to start
// rather than rejecting every request later (docs/api/operations.md §6.1).
func New(c Config) (*Verifier, error) {
	c = c.withDefaults()
	v := &Verifier{cfg: c, now: time.Now,
		// Claims are checked by hand afterwards, in the order and with the
		// messages of §6.3; the library's validator joins its findings.
		parser: jwt.NewParser(jwt.WithoutClaimsValidation(), jwt.WithJSONNumber())}
	if c.Secret != "" {
		v.secret = []byte(c.Secret)
	}
	if c.PublicKey != "" {
		key, err := parsePublicKeyPEM(c.PublicKey)
		if err != nil {
			return nil, err
		}
		v.pemKey = key
	}
	if c.JWKSURL != "" {
		u, err := url.Parse(c.JWKSURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("JWT_JWKS_URL %q is not an http(s) URL", c.JWKSURL)
		}
		v.jwks = newJWKSCache(c, func() time.Time { return v.now() })
	}
	switch c.Algorithm {
	case "HS256":
		if v.secret == nil {
			return nil, errors.New("JWT_ALGORITHM HS256 needs JWT_SECRET")
		}
	case "RS256", "RS384", "RS512", "EdDSA":
		if v.pemKey != nil && !keyFits(c.Algorithm, v.pemKey) {
			return nil, fmt.Errorf("JWT_PUBLIC_KEY holds a %s key, which cannot verify %s", keyKind(v.pemKey), c.Algorithm)
		}
		if v.pemKey == nil && v.jwks == nil {
			return nil, fmt.Errorf("JWT_ALGORITHM %s needs JWT_JWKS_URL or JWT_PUBLIC_KEY", c.Algorithm)
		}
	case "auto":
		if v.secret == nil && v.pemKey == nil && v.jwks == nil {
			return nil, errors.New("JWT_ALGORITHM auto needs JWT_SECRET, JWT_JWKS_URL or JWT_PUBLIC_KEY")
		}
	default:
		return nil, fmt.Errorf("JWT_ALGORITHM %q is not supported", c.Algorithm)
	}
	return v, nil
}

func keyKind(key any) string {
	switch key.(type) {
	case *rsa.PublicKey:
		return "RSA"
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return fmt.Sprintf("%T", key)
}

// Skipped reports whether path is listed in the skip paths: an exact match,
// or below an entry that ends in "/" (other than "/" itself).
func (v *Verifier) Skipped(path string) bool {
	return skipped(v.cfg.SkipPaths, path)
}

// BearerToken extracts the token from an Authorization header value. The
// "Bearer" scheme is matched case-insensitively; a value without it is taken
// as the bare token (docs/api/README.md §2.8).
func BearerToken(header string) string {
	h := strings.TrimSpace(header)
	if len(h) >= 6 && strings.EqualFold(h[:6], "bearer") && (len(h) == 6 || h[6] == ' ' || h[6] == '\t') {
		return strings.TrimSpace(h[6:])
	}
	return h
}

// VerifyRequest authenticates r from its Authorization header. A missing
// header and an empty token are different answers, so presence is judged on
// the header map rather than on the value.
func (v *Verifier) VerifyRequest(r *http.Request) (Identity, error) {
	vals, present := r.Header["Authorization"]
	if !present || len(vals) == 0 {
		return Identity{}, ErrAuthRequired
	}
	return v.Verify(r.Context(), BearerToken(vals[0]))
}

// Verify checks a bare token and returns its identity. Every failure is an
// *Error carrying the status and message of docs/api/operations.md §6.3. The order is
// well-formedness, algorithm, key, signature, then exp, nbf, iss and aud, so
// nothing about the claims is revealed for a token that is not genuine.
func (v *Verifier) Verify(ctx context.Context, token string) (Identity, error) {
	if token == "" {
		return Identity{}, ErrEmptyToken
	}
	claims := jwt.MapClaims{}
	tok, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		return v.key(ctx, t)
	})
	if err != nil {
		return Identity{}, v.classify(tok, err)
	}
	if e := v.checkClaims(claims); e != nil {
		return Identity{}, e
	}
	return v.identity(claims)
}

// classify maps a parse failure onto the §6.3 answers.
func (v *Verifier) classify(tok *jwt.Token, err error) *Error {
	var ae *Error
	switch {
	case errors.As(err, &ae):
		return ae // from key(): algorithm, kid or JWKS
	case errors.Is(err, jwt.ErrTokenMalformed):
		return ErrInvalidToken
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		// The library does not know the header's alg (or there is none).
		if tok != nil {
			if alg, _ := tok.Header["alg"].(string); alg != "" {
				return errAlgorithm(alg, v.cfg.Algorithm)
			}
		}
		return ErrInvalidToken
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return ErrInvalidSignature
	}
	return ErrInvalidToken.withCause(err)
}

// key selects the verification key for t, after checking that its algorithm
// is one this configuration accepts. Rejecting other algorithms here is what
// stops "none" and HS256-with-the-public-key forgeries.
func (v *Verifier) key(ctx context.Context, t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	if !v.accepts(alg) {
		return nil, errAlgorithm(alg, v.cfg.Algorithm)
	}
	if alg == "HS256" {
		return v.secret, nil
	}
	kid, _ := t.Header["kid"].(string)
	// With both sources configured, a token naming a kid is looked up in the
	// JWKS, and one without a kid uses the PEM key.
	pemFits := v.pemKey != nil && keyFits(alg, v.pemKey)
	if v.jwks != nil && (kid != "" || !pemFits) {
		keys, e := v.jwks.keysFor(ctx, kid, alg)
		if e != nil {
			return nil, e
		}
		if len(keys) == 1 {
			return keys[0], nil
		}
		set := jwt.VerificationKeySet{}
		for _, k := range keys {
			set.Keys = append(set.Keys, k)
		}
		return set, nil
	}
	if pemFits {
		return v.pemKey, nil
	}
	return nil, ErrInvalidSignature
}

// accepts reports whether tokens signed with alg are verified at all: the
// configured algorithm only, or under auto whatever a configured key source
// can verify.
func (v *Verifier) accepts(alg string) bool {
	if v.cfg.Algorithm != "auto" {
		return alg == v.cfg.Algorithm
	}
	switch alg {
	case "HS256":
		return v.secret != nil
	case "RS256", "RS384", "RS512", "EdDSA":
		return v.jwks != nil || (v.pemKey != nil && keyFits(alg, v.pemKey))
	}
	return false
}

// checkClaims applies exp and nbf with the clock skew, then iss and aud when
// configured. A registered claim of the wrong type makes the token invalid.
func (v *Verifier) checkClaims(c jwt.MapClaims) *Error {
	now := v.now()
	exp, err := c.GetExpirationTime()
	if err != nil {
		return ErrInvalidToken
	}
	if exp != nil && !now.Before(exp.Add(v.cfg.ClockSkew)) {
		return ErrExpired
	}
	nbf, err := c.GetNotBefore()
	if err != nil {
		return ErrInvalidToken
	}
	if nbf != nil && now.Add(v.cfg.ClockSkew).Before(nbf.Time) {
		return ErrNotYetValid
	}
	if v.cfg.Issuer != "" {
		if iss, err := c.GetIssuer(); err != nil || iss != v.cfg.Issuer {
			return ErrInvalidIssuer
		}
	}
	if v.cfg.Audience != "" {
		if aud, err := c.GetAudience(); err != nil || !slices.Contains(aud, v.cfg.Audience) {
			return ErrInvalidAudience
		}
	}
	return nil
}

// identity reads sub and the roles. Roles are lenient about shape (either
// claim may hold a string or an array of strings) because issuers differ,
// but the names are compared exactly.
func (v *Verifier) identity(c jwt.MapClaims) (Identity, error) {
	var id Identity
	id.Subject, _ = c["sub"].(string)
	if raw, present := c[v.cfg.TenantClaim]; present {
		t, isString := raw.(string)
		if !isString {
			return Identity{}, ErrInvalidTenant.withCause(fmt.Errorf("claim %q is a %T", v.cfg.TenantClaim, raw))
		}
		if err := tenant.Valid(t); err != nil {
			return Identity{}, ErrInvalidTenant.withCause(err)
		}
		id.Tenant = t
	}
	if exp, err := c.GetExpirationTime(); err == nil && exp != nil {
		t := exp.UTC()
		id.ExpiresAt = &t
	}
	for _, claim := range []string{v.cfg.RolesClaim, v.cfg.RolesArrayClaim} {
		switch r := c[claim].(type) {
		case string:
			id.Roles = appendRole(id.Roles, r)
		case []any:
			for _, x := range r {
				if s, ok := x.(string); ok {
					id.Roles = appendRole(id.Roles, s)
				}
			}
		}
	}
	for _, r := range id.Roles {
		a := AccessNone
		switch r {
		case v.cfg.RoleAdmin:
			a = AccessAdmin
		case v.cfg.RoleReadWrite:
			a = AccessReadWrite
		case v.cfg.RoleReadOnly:
			a = AccessReadOnly
		case v.cfg.RoleOperator:
			a = AccessReadOnly
			id.Operator = true
		}
		id.Access = max(id.Access, a)
	}
	return id, nil
}

func appendRole(roles []string, r string) []string {
	if r == "" || slices.Contains(roles, r) {
		return roles
	}
	return append(roles, r)
}
