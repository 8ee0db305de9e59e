# Everyday commands; CI runs .ci/run, which ends in `make test`.
GO ?= go

.PHONY: run test build vet

run:
	$(GO) run ./cmd/queen

# client/ is a module of its own (see go.work): ./... at the root does not reach it, so it is
# tested and vetted from its directory, which works with and without GOWORK=off.
test:
	$(GO) test -race -count=1 ./...
	cd client && $(GO) test -race -count=1 ./...

build:
	$(GO) build -o bin/ ./cmd/...

vet:
	$(GO) vet ./...
	cd client && $(GO) vet ./...
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
