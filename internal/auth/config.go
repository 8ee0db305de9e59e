package auth

import (
	"net/http"
	"strings"
	"time"

	"github.com/queen-go/queen/internal/config"
)

// Config is everything the verifier needs; FromConfig fills it from the
// broker configuration. Empty names and zero intervals take the defaults of
// docs/api/operations.md §1.3, as an unset variable would. ClockSkew and SkipPaths are
// used as given, because zero skew and no skip paths are meaningful choices.
type Config struct {
	Algorithm string // HS256, RS256, RS384, RS512, EdDSA or auto
	Secret    string // HS256 shared secret
	JWKSURL   string // JWKS endpoint for RS*/EdDSA keys
	PublicKey string // PEM public key (RSA or Ed25519)
	Issuer    string // required iss when non-empty
	Audience  string // required aud when non-empty

	ClockSkew           time.Duration // tolerance on exp and nbf
	JWKSRefreshInterval time.Duration // age after which the JWKS is fetched again
	JWKSTimeout         time.Duration // bound on one JWKS fetch

	RolesClaim      string // claim holding one role
	RolesArrayClaim string // claim holding several roles
	RoleAdmin       string
	RoleReadWrite   string
	RoleReadOnly    string
	// TenantClaim names the claim carrying the caller's tenant (docs/api/concepts.md §14).
	TenantClaim string
	// RoleOperator is the role that sees every tenant on the read routes.
	RoleOperator string

	// SkipPaths bypass authentication: exact matches, and an entry ending in
	// "/" (other than "/" itself) matches every path below it.
	SkipPaths []string

	// HTTPClient fetches the JWKS; nil means a plain client. The timeout is
	// applied per fetch from JWKSTimeout whatever the client says.
	HTTPClient *http.Client
}

// DefaultSkipPaths is the JWT_SKIP_PATHS default.
var DefaultSkipPaths = []string{"/health", "/metrics/prometheus", "/metrics", "/"}

// FromConfig maps the parsed JWT_* variables onto a Config.
func FromConfig(c config.Config) Config {
	return Config{
		Algorithm: c.JWTAlgorithm, Secret: c.JWTSecret, JWKSURL: c.JWTJWKSURL, PublicKey: c.JWTPublicKey,
		Issuer: c.JWTIssuer, Audience: c.JWTAudience, ClockSkew: c.JWTClockSkew,
		JWKSRefreshInterval: c.JWTJWKSRefreshInterval, JWKSTimeout: c.JWTJWKSTimeout,
		RolesClaim: c.JWTRolesClaim, RolesArrayClaim: c.JWTRolesArrayClaim,
		RoleAdmin: c.JWTRoleAdmin, RoleReadWrite: c.JWTRoleReadWrite, RoleReadOnly: c.JWTRoleReadOnly,
		TenantClaim: c.JWTTenantClaim, RoleOperator: c.JWTRoleOperator,
		SkipPaths: c.JWTSkipPaths,
	}
}

// withDefaults fills the fields an unset variable would have filled.
func (c Config) withDefaults() Config {
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	def(&c.Algorithm, "HS256")
	def(&c.RolesClaim, "role")
	def(&c.RolesArrayClaim, "roles")
	def(&c.RoleAdmin, "admin")
	def(&c.RoleReadWrite, "read-write")
	def(&c.RoleReadOnly, "read-only")
	def(&c.TenantClaim, "tenant")
	def(&c.RoleOperator, "operator")
	if c.JWKSRefreshInterval <= 0 {
		c.JWKSRefreshInterval = time.Hour
	}
	if c.JWKSTimeout <= 0 {
		c.JWKSTimeout = 5 * time.Second
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	return c
}

// skipped reports whether path is covered by one of the skip entries.
func skipped(entries []string, path string) bool {
	for _, e := range entries {
		if path == e {
			return true
		}
		// "/" alone would otherwise open every route, which is never what the
		// default list (which contains "/" for the dashboard) means.
		if e != "/" && strings.HasSuffix(e, "/") && strings.HasPrefix(path, e) {
			return true
		}
	}
	return false
}
