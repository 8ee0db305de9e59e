# Everyday commands; CI runs .ci/run, which ends in `make test`.
GO ?= go

.PHONY: run test build vet lint

run:
	$(GO) run ./cmd/queen

# client/ is a module of its own (see go.work): ./... at the root does not reach it, so it is
# tested and vetted from its directory, which works with and without GOWORK=off.
#
# Connection budget (README.md, docs/operations.md): at most TEST_PACKAGES packages run at once
# and each runs at most TEST_PARALLEL tests (so test servers) at once, whatever the machine's
# CPU count, so the suite holds at most 42 PostgreSQL connections (pgtest.Budget) on a server
# others may share. Both are explicit: go test's defaults follow GOMAXPROCS.
TEST_PACKAGES ?= 2
TEST_PARALLEL ?= 2

test:
	$(GO) test -race -count=1 -p $(TEST_PACKAGES) -parallel $(TEST_PARALLEL) ./...
	cd client && $(GO) test -race -count=1 ./...

build:
	$(GO) build -o bin/ ./cmd/...

vet:
	$(GO) vet ./...
	cd client && $(GO) vet ./...
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# go vet, then staticcheck (staticcheck.conf) on every module of the build: the main module,
# or each module a go.work uses. staticcheck is pinned in tools/go.mod, outside the broker's
# dependencies; -modfile refuses workspace mode, so the tool is built with GOWORK=off and
# `go tool -n` gives the binary, which then loads the packages as the go command does here.
LINT_PATTERNS = $$($(GO) list -m -f '{{.Dir}}/...')

lint:
	$(GO) vet $(LINT_PATTERNS)
	sc="$$(GOWORK=off $(GO) tool -modfile=tools/go.mod -n staticcheck)" && "$$sc" $(LINT_PATTERNS)
