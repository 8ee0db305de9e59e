// Package sdktest holds the tests of the Go client (github.com/queen-go/queen/client) that
// need a real broker: the client is a module of its own, depending only on the standard
// library and google/uuid, so it cannot import internal/testserver. These tests and the
// examples with output that talk to a broker live here, as external tests of the client's
// exported API; the client module keeps its unit tests (httptest fakes) and the examples
// that need no broker.
package sdktest
