package sdktest

import (
	"fmt"
	"os"
	"testing"

	"github.com/queen-go/queen/internal/testserver"
)

// brokerURL is the package's broker, shared by the tests (each uses its own queues) and the
// examples. In a real program it is "http://localhost:6632".
var brokerURL string

// testDSN is the package's own database, for tests that need a broker of their own.
var testDSN string

func TestMain(m *testing.M) {
	testserver.Main(m, &testDSN, func() int {
		// Examples have no *testing.T, so the shared broker is started here with a stand-in.
		tb := &mainTB{}
		defer tb.cleanup()
		brokerURL = testserver.Start(tb, testDSN, testserver.Options{}).URL
		return m.Run()
	})
}

// mainTB lets TestMain use helpers written for tests. Only the methods such helpers call are
// implemented; the embedded nil interface makes any other call fail loudly.
type mainTB struct {
	testing.TB
	cleanups []func()
}

func (*mainTB) Helper()                        {}
func (*mainTB) Name() string                   { return "TestMain" }
func (*mainTB) Logf(format string, a ...any)   { fmt.Fprintf(os.Stderr, format+"\n", a...) }
func (*mainTB) Errorf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (*mainTB) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (*mainTB) Failed() bool                   { return false } // a failure has already panicked
func (tb *mainTB) Cleanup(f func())            { tb.cleanups = append(tb.cleanups, f) }

// TempDir is a directory removed at cleanup (the shared broker's spool lives there).
func (tb *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "sdktest-")
	if err != nil {
		panic(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (tb *mainTB) cleanup() {
	for i := len(tb.cleanups) - 1; i >= 0; i-- {
		tb.cleanups[i]()
	}
}
