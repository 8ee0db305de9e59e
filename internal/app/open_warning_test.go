package app_test

import (
	"net"
	"strings"
	"testing"

	"github.com/queen-go/queen/internal/app"
	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/testkit"
)

// A broker without authentication that listens beyond this machine says so once at startup,
// with how to close it; one on loopback, or with authentication, says nothing of the kind.
func TestOpenBrokerWarnsAtStartup(t *testing.T) {
	schema := freshSchema("open_warn")
	for _, tc := range []struct {
		name   string
		listen string
		auth   bool
		want   bool
	}{
		{"open on every interface", "0.0.0.0:0", false, true},
		{"open on loopback", "127.0.0.1:0", false, false},
		{"authentication on", "0.0.0.0:0", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", tc.listen)
			if err != nil {
				t.Fatal(err)
			}
			var log testkit.LogBuffer
			opts := []app.Option{app.WithListener(ln), app.WithLogger(log.Logger())}
			if tc.auth {
				opts = append(opts, app.WithAuth(auth.Config{Algorithm: "HS256", Secret: "open-warning-test"}))
			}
			startApp(t, productionConfig(t, testDSN, schema), opts...)
			var warns []string
			for _, l := range log.Lines() {
				if strings.Contains(l, "the broker is open") {
					warns = append(warns, l)
				}
			}
			if !tc.want {
				if len(warns) != 0 {
					t.Fatalf("warned: %q", warns)
				}
				return
			}
			if len(warns) != 1 || !strings.Contains(warns[0], "level=WARN") || !strings.Contains(warns[0], "HOST=127.0.0.1") ||
				!strings.Contains(warns[0], "JWT_ENABLED=true") {
				t.Fatalf("want one WARN line naming HOST=127.0.0.1 and JWT_ENABLED=true, got %q\nlog:\n%s", warns, log.String())
			}
		})
	}
}
