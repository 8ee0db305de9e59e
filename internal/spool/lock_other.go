//go:build !unix

package spool

import (
	"errors"
	"os"
)

// lockDir refuses: without flock, two instances could share a directory unnoticed.
func lockDir(string) (*os.File, error) {
	return nil, errors.New("spool: directory locking needs a unix system")
}
