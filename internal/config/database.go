package config

import (
	"strconv"
	"strings"
)

// Database returns the connection string to use, or embedded=true when none
// is configured and the broker must run its own PostgreSQL (docs/api/operations.md
// §2.1). The PG_* form is a key/value string rather than a URL because it
// also carries a Unix socket directory in PG_HOST without special cases.
func (c Config) Database() (dsn string, embedded bool) {
	if c.DatabaseURL != "" {
		return c.DatabaseURL, false
	}
	if !c.PGConfigured {
		return "", true
	}
	sslmode := "disable"
	if c.PGUseSSL {
		sslmode = "require"
		if c.PGSSLRejectUnauthorized {
			sslmode = "verify-full"
		}
	}
	var b strings.Builder
	kv := func(k, v string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(quoteDSN(v))
	}
	kv("host", c.PGHost)
	kv("port", strconv.Itoa(c.PGPort))
	kv("dbname", c.PGDB)
	kv("user", c.PGUser)
	kv("password", c.PGPassword)
	kv("sslmode", sslmode)
	return b.String(), false
}

// quoteDSN quotes a key/value connection string value the libpq way, so that
// spaces, quotes and backslashes in passwords survive.
func quoteDSN(v string) string {
	if v != "" && !strings.ContainsAny(v, ` '\`) {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(v) + "'"
}
