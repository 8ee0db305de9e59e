// Package encryption seals message payloads at rest with AES-256-GCM in the envelope the Queen
// clients know (docs/api/concepts.md §12): {"encrypted","iv","authTag"}, standard base64 with padding.
package encryption

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
)

const (
	ivSize  = 16 // the Queen envelope uses a 16-byte IV, not GCM's usual 12
	tagSize = 16
)

// Key is a loaded AES-256 key.
type Key struct{ aead cipher.AEAD }

// ParseKey reads QUEEN_ENCRYPTION_KEY: 64 hex characters.
func ParseKey(hexKey string) (*Key, error) {
	raw, err := hex.DecodeString(hexKey)
	if err != nil || len(raw) != 32 {
		return nil, errors.New("QUEEN_ENCRYPTION_KEY must be 64 hex characters (a 32-byte AES-256 key)")
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCMWithNonceSize(block, ivSize)
	if err != nil {
		return nil, err
	}
	return &Key{aead: aead}, nil
}

type envelope struct {
	Encrypted string `json:"encrypted"`
	IV        string `json:"iv"`
	AuthTag   string `json:"authTag"`
}

// Seal encrypts the compact JSON serialisation of payload with a fresh random IV and returns
// the envelope as JSON.
func (k *Key) Seal(payload []byte) ([]byte, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, payload); err != nil {
		return nil, fmt.Errorf("payload is not JSON: %w", err)
	}
	iv := make([]byte, ivSize)
	if _, err := rand.Read(iv); err != nil {
		return nil, err
	}
	sealed := k.aead.Seal(nil, iv, compact.Bytes(), nil)
	ct, tag := sealed[:len(sealed)-tagSize], sealed[len(sealed)-tagSize:]
	enc := base64.StdEncoding
	return json.Marshal(envelope{Encrypted: enc.EncodeToString(ct), IV: enc.EncodeToString(iv), AuthTag: enc.EncodeToString(tag)})
}

// Open decrypts an envelope written by Seal (or by the original Queen server) and returns
// the payload JSON.
func (k *Key) Open(stored []byte) ([]byte, error) {
	var e envelope
	if err := json.Unmarshal(stored, &e); err != nil {
		return nil, fmt.Errorf("not an encryption envelope: %w", err)
	}
	enc := base64.StdEncoding
	ct, err1 := enc.DecodeString(e.Encrypted)
	iv, err2 := enc.DecodeString(e.IV)
	tag, err3 := enc.DecodeString(e.AuthTag)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("malformed envelope: %w", err)
	}
	if len(iv) != ivSize || len(tag) != tagSize {
		return nil, errors.New("malformed envelope: iv and authTag must be 16 bytes")
	}
	return k.aead.Open(nil, iv, append(ct, tag...), nil)
}

// OpenStored returns a stored payload decrypted when it is flagged encrypted (pops, message
// detail, DLQ entries, traces by name). Without a key (k nil) or with the wrong one the
// envelope is returned as stored and a warning logged (docs/api/concepts.md §12): a reader still sees
// the message, and nothing is lost.
func (k *Key) OpenStored(log *slog.Logger, messageID string, payload []byte, encrypted bool) []byte {
	if !encrypted {
		return payload
	}
	if k == nil {
		log.Warn("encrypted message delivered as stored: no QUEEN_ENCRYPTION_KEY loaded", "message", messageID)
		return payload
	}
	plain, err := k.Open(payload)
	if err != nil {
		log.Warn("encrypted message delivered as stored: cannot decrypt", "message", messageID, "err", err)
		return payload
	}
	return plain
}
