package mq

import "errors"

// ErrUnavailable means the database could not be reached within the connection timeout, or
// refused or dropped the work (shutdown, recovery, read-only, network failure).
var ErrUnavailable = errors.New("database unavailable")
