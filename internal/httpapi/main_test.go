package httpapi_test

import (
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// testDSN is this package's own database, migrated once.
var testDSN string

func TestMain(m *testing.M) {
	testserver.Main(m, &testDSN, m.Run)
}
