package httpapi_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/queen-go/queen/internal/pgtest"
	"github.com/queen-go/queen/internal/testserver"
)

// testDSN is this package's own database, migrated once.
var testDSN string

func TestMain(m *testing.M) {
	pgtest.Main(m, func(dsn string) int {
		if err := testserver.Migrate(context.Background(), dsn, ""); err != nil {
			fmt.Fprintln(os.Stderr, "migrate:", err)
			return 1
		}
		testDSN = dsn
		return m.Run()
	})
}
