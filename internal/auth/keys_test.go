package auth

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var (
	keysOnce sync.Once
	rsaKey   *rsa.PrivateKey
	rsaKey2  *rsa.PrivateKey
	edKey    ed25519.PrivateKey
)

// testKeys generates the key pairs once; RSA generation is slow under -race.
func testKeys(t *testing.T) {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if rsaKey2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if _, edKey, err = ed25519.GenerateKey(rand.Reader); err != nil {
			panic(err)
		}
	})
}

func pkixPEM(t *testing.T, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func TestVerifierRS256PEM(t *testing.T) {
	testKeys(t)
	claims := jwt.MapClaims{"sub": "rsa-user", "roles": []string{"admin"}}
	pkcs1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&rsaKey.PublicKey)}))
	oneLine := strings.ReplaceAll(pkixPEM(t, &rsaKey.PublicKey), "\n", `\n`)
	for name, key := range map[string]string{"pkix": pkixPEM(t, &rsaKey.PublicKey), "pkcs1": pkcs1, "escaped newlines": oneLine} {
		t.Run(name, func(t *testing.T) {
			v, _ := newVerifier(t, Config{Algorithm: "RS256", PublicKey: key})
			id := verifyOK(t, v, sign(t, jwt.SigningMethodRS256, rsaKey, "", claims))
			if id.Subject != "rsa-user" || id.Access != AccessAdmin {
				t.Fatalf("identity %+v", id)
			}
			verifyErr(t, v, sign(t, jwt.SigningMethodRS256, rsaKey2, "", claims), unauthorized, "Invalid token signature")
			verifyErr(t, v, sign(t, jwt.SigningMethodRS512, rsaKey, "", claims), unauthorized, "Token uses RS512, expected RS256")
			verifyErr(t, v, sign(t, jwt.SigningMethodHS256, hsKey, "", claims), unauthorized, "Token uses HS256, expected RS256")
			verifyErr(t, v, sign(t, jwt.SigningMethodEdDSA, edKey, "", claims), unauthorized, "Token uses EdDSA, expected RS256")
		})
	}
	// RS384 and RS512 are separate settings verified with the same kind of key.
	for _, m := range []*jwt.SigningMethodRSA{jwt.SigningMethodRS384, jwt.SigningMethodRS512} {
		v, _ := newVerifier(t, Config{Algorithm: m.Alg(), PublicKey: pkixPEM(t, &rsaKey.PublicKey)})
		verifyOK(t, v, sign(t, m, rsaKey, "", claims))
	}
}

func TestVerifierEdDSAPEM(t *testing.T) {
	testKeys(t)
	v, clk := newVerifier(t, Config{Algorithm: "EdDSA", PublicKey: pkixPEM(t, edKey.Public()), ClockSkew: 30 * time.Second})
	tok := sign(t, jwt.SigningMethodEdDSA, edKey, "", jwt.MapClaims{"sub": "ed", "role": "read-only", "exp": t0.Add(time.Minute).Unix()})
	if id := verifyOK(t, v, tok); id.Subject != "ed" || id.Access != AccessReadOnly {
		t.Fatalf("identity %+v", id)
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	verifyErr(t, v, sign(t, jwt.SigningMethodEdDSA, other, "", jwt.MapClaims{}), unauthorized, "Invalid token signature")
	verifyErr(t, v, sign(t, jwt.SigningMethodRS256, rsaKey, "", jwt.MapClaims{}), unauthorized, "Token uses RS256, expected EdDSA")
	clk.Advance(91 * time.Second)
	verifyErr(t, v, tok, unauthorized, "Token has expired")
}

func TestVerifierNewRejectsWrongPEMKind(t *testing.T) {
	testKeys(t)
	if _, err := New(Config{Algorithm: "EdDSA", PublicKey: pkixPEM(t, &rsaKey.PublicKey)}); err == nil {
		t.Fatal("EdDSA with an RSA key accepted")
	}
	if _, err := New(Config{Algorithm: "RS256", PublicKey: pkixPEM(t, edKey.Public())}); err == nil {
		t.Fatal("RS256 with an Ed25519 key accepted")
	}
	priv, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	if _, err := New(Config{Algorithm: "RS256", PublicKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv}))}); err == nil {
		t.Fatal("a private key block accepted")
	}
}

func TestVerifierAutoSecretAndPEM(t *testing.T) {
	testKeys(t)
	v, _ := newVerifier(t, Config{Algorithm: "auto", Secret: string(hsKey), PublicKey: pkixPEM(t, &rsaKey.PublicKey)})
	c := jwt.MapClaims{"sub": "x"}
	verifyOK(t, v, sign(t, jwt.SigningMethodHS256, hsKey, "", c))
	verifyOK(t, v, sign(t, jwt.SigningMethodRS256, rsaKey, "", c))
	verifyOK(t, v, sign(t, jwt.SigningMethodRS384, rsaKey, "", c))
	verifyErr(t, v, sign(t, jwt.SigningMethodRS256, rsaKey2, "", c), unauthorized, "Invalid token signature")
	// No Ed25519 key is configured, so EdDSA is not accepted at all.
	verifyErr(t, v, sign(t, jwt.SigningMethodEdDSA, edKey, "", c), unauthorized, "Token uses EdDSA, expected auto")
	verifyErr(t, v, sign(t, jwt.SigningMethodHS512, hsKey, "", c), unauthorized, "Token uses HS512, expected auto")
	// The classic confusion attack: HS256 keyed with the RSA public key PEM.
	forged := sign(t, jwt.SigningMethodHS256, []byte(pkixPEM(t, &rsaKey.PublicKey)), "", c)
	verifyErr(t, v, forged, unauthorized, "Invalid token signature")

	edOnly, _ := newVerifier(t, Config{Algorithm: "auto", PublicKey: pkixPEM(t, edKey.Public())})
	verifyOK(t, edOnly, sign(t, jwt.SigningMethodEdDSA, edKey, "", c))
	verifyErr(t, edOnly, sign(t, jwt.SigningMethodHS256, hsKey, "", c), unauthorized, "Token uses HS256, expected auto")
	verifyErr(t, edOnly, sign(t, jwt.SigningMethodRS256, rsaKey, "", c), unauthorized, "Token uses RS256, expected auto")
}
