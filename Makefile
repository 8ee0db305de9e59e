# Everyday commands; CI runs .ci/run, which ends in `make test`.
GO ?= go

.PHONY: run test build vet

run:
	$(GO) run ./cmd/queen

test:
	$(GO) test -race -count=1 ./...

build:
	$(GO) build -o bin/ ./cmd/...

vet:
	$(GO) vet ./...
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
