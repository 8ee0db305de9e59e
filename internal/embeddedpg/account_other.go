//go:build !unix

package embeddedpg

import (
	"errors"
	"os"
	"syscall"
)

// account exists on Unix only; the stubs below let the broker build elsewhere, where Start
// reports that the embedded server is unsupported.
type account struct{ name, why string }

func serverAccount(string) (*account, error) {
	return nil, errors.New("embedded PostgreSQL is supported on Unix-like systems only; set DATABASE_URL")
}

func sysProcAttr(*account, bool, bool) *syscall.SysProcAttr { return nil }

func (a *account) chown(string) error            { return nil }
func (a *account) adopt(string) error            { return nil }
func checkOwnedBySelf(string) error              { return nil }
func (a *account) owns(os.FileInfo) bool         { return true }
func (a *account) checkTraversable(string) error { return nil }
func processAlive(int) bool                      { return true }
func processName(int) (string, bool)             { return "", false }

var quitSignal = os.Kill
