package encryption

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
)

const testKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

func TestSealOpenRoundTrip(t *testing.T) {
	k, err := ParseKey(testKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{`{"a": 1, "b": [true, null]}`, `null`, `"x"`, `12.5`} {
		env, err := k.Seal([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		var e envelope
		if err := json.Unmarshal(env, &e); err != nil || e.Encrypted == "" || e.IV == "" || e.AuthTag == "" {
			t.Fatalf("envelope %s: %v", env, err)
		}
		got, err := k.Open(env)
		if err != nil {
			t.Fatal(err)
		}
		var want, have any
		_ = json.Unmarshal([]byte(p), &want)
		_ = json.Unmarshal(got, &have)
		if b1, _ := json.Marshal(want); string(b1) != mustJSON(t, have) {
			t.Fatalf("round trip %s -> %s", p, got)
		}
	}
}

// The envelope must be what another implementation of the format can open: AES-256-GCM,
// 16-byte IV, ciphertext and tag separate, over the compact JSON.
func TestEnvelopeIsStandardGCM(t *testing.T) {
	k, _ := ParseKey(testKey)
	env, err := k.Seal([]byte(`{ "orderId" : 7 }`))
	if err != nil {
		t.Fatal(err)
	}
	var e envelope
	_ = json.Unmarshal(env, &e)
	raw, _ := hex.DecodeString(testKey)
	block, _ := aes.NewCipher(raw)
	gcm, _ := cipher.NewGCMWithNonceSize(block, 16)
	ct, _ := base64.StdEncoding.DecodeString(e.Encrypted)
	iv, _ := base64.StdEncoding.DecodeString(e.IV)
	tag, _ := base64.StdEncoding.DecodeString(e.AuthTag)
	if len(iv) != 16 || len(tag) != 16 {
		t.Fatalf("iv %d bytes, tag %d bytes", len(iv), len(tag))
	}
	plain, err := gcm.Open(nil, iv, append(ct, tag...), nil)
	if err != nil || string(plain) != `{"orderId":7}` {
		t.Fatalf("plain %q, %v", plain, err)
	}
}

func TestWrongKeyAndTamperingFail(t *testing.T) {
	k, _ := ParseKey(testKey)
	other, _ := ParseKey(strings.Repeat("ab", 32))
	env, _ := k.Seal([]byte(`{"x":1}`))
	if _, err := other.Open(env); err == nil {
		t.Fatal("opened with the wrong key")
	}
	if _, err := k.Open([]byte(`{"x":1}`)); err == nil {
		t.Fatal("opened a plain payload")
	}
}

func TestParseKeyRejectsMalformed(t *testing.T) {
	for _, s := range []string{"", "abc", strings.Repeat("zz", 32), strings.Repeat("ab", 31)} {
		if _, err := ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q) accepted", s)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// OpenStored shows a reader what it can: the plain payload with the right key, the stored
// envelope (never an error) without a key or with another key, and unencrypted payloads as they are.
func TestOpenStored(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	k, err := ParseKey(strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	other, err := ParseKey(strings.Repeat("cd", 32))
	if err != nil {
		t.Fatal(err)
	}
	env, err := k.Seal([]byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := k.OpenStored(log, "m", env, true); string(got) != `{"a":1}` {
		t.Fatalf("right key: %s", got)
	}
	var none *Key
	for name, key := range map[string]*Key{"no key": none, "other key": other} {
		if got := key.OpenStored(log, "m", env, true); string(got) != string(env) {
			t.Fatalf("%s: %s, want the envelope as stored", name, got)
		}
	}
	if got := none.OpenStored(log, "m", []byte(`{"b":2}`), false); string(got) != `{"b":2}` {
		t.Fatalf("not encrypted: %s", got)
	}
}
