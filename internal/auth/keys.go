package auth

import (
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// parsePublicKeyPEM reads JWT_PUBLIC_KEY: a PKIX "PUBLIC KEY", a PKCS#1
// "RSA PUBLIC KEY" or a certificate, holding an RSA or Ed25519 key.
func parsePublicKeyPEM(s string) (any, error) {
	// Environment variables often carry PEM with literal "\n" sequences,
	// since many deployment tools cannot hold a multi-line value.
	if !strings.Contains(s, "\n") {
		s = strings.ReplaceAll(s, `\n`, "\n")
	}
	block, _ := pem.Decode([]byte(strings.TrimSpace(s)))
	if block == nil {
		return nil, errors.New("JWT_PUBLIC_KEY is not PEM")
	}
	var key any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = cert.PublicKey
		}
	default:
		return nil, fmt.Errorf("JWT_PUBLIC_KEY: unsupported PEM block %q", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("JWT_PUBLIC_KEY: %w", err)
	}
	switch key.(type) {
	case *rsa.PublicKey, ed25519.PublicKey:
		return key, nil
	}
	return nil, fmt.Errorf("JWT_PUBLIC_KEY: %T is neither an RSA nor an Ed25519 key", key)
}

// keyFits reports whether key can verify alg at all, so that a key of the
// wrong kind is reported as a bad signature rather than tried.
func keyFits(alg string, key any) bool {
	switch key.(type) {
	case *rsa.PublicKey:
		return alg == "RS256" || alg == "RS384" || alg == "RS512"
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

// jwk is one entry of a JWKS document, reduced to what verification needs.
type jwk struct {
	kid string
	alg string // the key's own "alg", "" when it names none
	key any    // *rsa.PublicKey or ed25519.PublicKey
}

// fits reports whether the key may verify a token signed with alg.
func (k jwk) fits(alg string) bool {
	return keyFits(alg, k.key) && (k.alg == "" || k.alg == alg)
}

// rawJWK is the wire form of a JWK.
type rawJWK struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Crv string `json:"crv"`
	N   string `json:"n"`
	E   string `json:"e"`
	X   string `json:"x"`
}

// parseJWK converts one JWKS entry. ok is false for keys this broker cannot
// use (EC, encryption keys, damaged entries), which are skipped rather than
// failing the whole document: one odd key must not lock everyone out.
func parseJWK(r rawJWK) (jwk, bool) {
	if r.Use != "" && r.Use != "sig" {
		return jwk{}, false
	}
	switch r.Kty {
	case "RSA":
		n, err1 := b64(r.N)
		e, err2 := b64(r.E)
		if err1 != nil || err2 != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
			return jwk{}, false
		}
		exp := int(new(big.Int).SetBytes(e).Int64())
		if exp < 3 {
			return jwk{}, false
		}
		return jwk{kid: r.Kid, alg: r.Alg, key: &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}}, true
	case "OKP":
		x, err := b64(r.X)
		if r.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
			return jwk{}, false
		}
		return jwk{kid: r.Kid, alg: r.Alg, key: ed25519.PublicKey(x)}, true
	}
	return jwk{}, false
}

// b64 decodes base64url with or without padding, since JWKS publishers
// differ on that point.
func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}
