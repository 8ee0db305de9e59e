# Everyday commands; CI runs .ci/run, which ends in `make test` and scripts/readme-test.sh.
GO ?= go

.PHONY: run test test-otlp test-pooler build release vet lint readme-test web web-check e2e

# The version stamped into every binary with -X main.version (internal/version reads it):
# `git describe` (nearest tag, commits since, commit, "-dirty"), "dev" outside a git checkout.
# Override with `make release VERSION=v1.2.3`.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS = -X main.version=$(VERSION)
# The commands built and released; queenctl reads main.version too.
CMDS = queen queenctl queen-bench
PLATFORMS = linux/amd64 linux/arm64

# The broker runs as make's child, not under `go run`: on Ctrl-C it shuts down and exits 0,
# and make stays silent (see docs/deploy.md). ARGS passes flags: make run ARGS=--dev.
run: build
	exec ./bin/queen $(ARGS)

# client/ and cmd/queenctl are modules of their own (see go.work): ./... at the root does not
# reach them, so they are tested and vetted from their directories, which works with and without GOWORK=off.
#
# Connection budget (README.md, docs/operations.md): at most TEST_PACKAGES packages run at once
# and each runs at most TEST_PARALLEL tests (so test servers) at once, whatever the machine's
# CPU count, so the suite holds at most 45 PostgreSQL connections (pgtest.Budget) on a server
# others may share. Both are explicit: go test's defaults follow GOMAXPROCS.
TEST_PACKAGES ?= 2
TEST_PARALLEL ?= 2

#
# internal/app's tests (frozen and SIGSTOPped databases, brokers killed with -9, spool outages)
# spend most of their minute waiting on timers and child processes, and hold at most one
# connection of the shared server (their stopped servers are private): they run beside the
# TEST_PACKAGES slots, not in one, logged to a file printed when they end. The slowest of the
# rest are named first, so they start first instead of last (go test starts packages in the
# order given).
#
# -trimpath: the build cache then holds the same entries whatever folder a clone is in, so a fresh
# clone (CI's) reuses what earlier runs compiled (a clone's first test build: 40 s -> 22 s here).
# -vet=off: go test would run a subset of go vet over every package first (about 10 s here);
# `make lint` and `make vet` run all of it, and CI runs `make lint` beside `make test`.
GOTEST = $(GO) test -trimpath -race -vet=off -count=1
TEST_BESIDE = ./internal/app
TEST_FIRST = ./internal/httpapi ./internal/store ./internal/bench ./internal/sdktest

test:
	@bash scripts/test-deps.sh
	@all="$$($(GO) list ./...)" && apart="$$($(GO) list $(TEST_BESIDE))" || exit 1; \
	log="$$(mktemp)"; \
	echo "$(GOTEST) -parallel $(TEST_PARALLEL) $(TEST_BESIDE) (beside the rest, logged)"; \
	$(GOTEST) -parallel $(TEST_PARALLEL) $(TEST_BESIDE) >"$$log" 2>&1 & pid=$$!; \
	echo "$(GOTEST) -p $(TEST_PACKAGES) -parallel $(TEST_PARALLEL) $(TEST_FIRST) <the rest of ./...>"; \
	$(GOTEST) -p $(TEST_PACKAGES) -parallel $(TEST_PARALLEL) $(TEST_FIRST) \
		$$(echo "$$all" | grep -vxF "$$apart"); rest=$$?; \
	wait $$pid; besides=$$?; cat "$$log"; rm -f "$$log"; \
	[ $$rest = 0 ] && [ $$besides = 0 ]
	cd client && $(GOTEST) ./...
	cd cmd/queenctl && $(GOTEST) -p $(TEST_PACKAGES) -parallel $(TEST_PARALLEL) ./...
	$(MAKE) --no-print-directory test-otlp
	$(MAKE) --no-print-directory test-pooler

# The OTLP exporter is linked only with -tags otlp (internal/app/tracing_otlp.go): its export
# test runs in that build; the untagged run above checks that the default binary refuses an
# OTLP endpoint.
test-otlp:
	$(GOTEST) -tags otlp -run '^TestOTLP' ./internal/app

# The end-to-end suites again with every broker behind a real PgBouncer in transaction mode
# (docs/deploy.md, "Behind a connection pooler"), without and with DATABASE_SESSION_URL; each
# package starts its own pooler (Debian's pgbouncer; .ci/run installs it). The two modes run side
# by side (the session mode logged, printed when it ends): their tests mostly wait, and each
# package's pooler holds at most testserver.PoolerSize server connections.
TEST_POOLED = ./internal/httpapi ./internal/sdktest
test-pooler:
	@log="$$(mktemp)"; \
	echo "QUEEN_TEST_POOLER=session $(GOTEST) -parallel $(TEST_PARALLEL) $(TEST_POOLED) (beside, logged)"; \
	QUEEN_TEST_POOLER=session $(GOTEST) -p 1 -parallel $(TEST_PARALLEL) $(TEST_POOLED) >"$$log" 2>&1 & pid=$$!; \
	echo "QUEEN_TEST_POOLER=transaction $(GOTEST) -parallel $(TEST_PARALLEL) $(TEST_POOLED)"; \
	QUEEN_TEST_POOLER=transaction $(GOTEST) -p 1 -parallel $(TEST_PARALLEL) $(TEST_POOLED); tx=$$?; \
	wait $$pid; session=$$?; cat "$$log"; rm -f "$$log"; \
	[ $$tx = 0 ] && [ $$session = 0 ]

# cmd/queenctl is a module of its own too (go.work): ./cmd/... does not reach it, so it is named.
# TAGS=otlp links the OTLP trace exporter into bin/queen (docs/operations.md, Tracing); without
# it the broker links no gRPC and no trace SDK.
TAGS ?=
build:
	$(GO) build -tags "$(TAGS)" -ldflags "$(LDFLAGS)" -o bin/ ./cmd/... ./cmd/queenctl

# Static binaries (no cgo, no build paths, no symbol tables) for each platform in dist/,
# named command-version-os-arch, and their SHA256SUMS; queen-otlp is queen built with the
# OTLP trace exporter (-tags otlp).
release:
	rm -rf dist && mkdir -p dist
	for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		for c in $(CMDS); do \
			CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath \
				-ldflags "-s -w $(LDFLAGS)" -o dist/$$c-$(VERSION)-$$os-$$arch ./cmd/$$c || exit 1; \
		done; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -tags otlp \
			-ldflags "-s -w $(LDFLAGS)" -o dist/queen-otlp-$(VERSION)-$$os-$$arch ./cmd/queen || exit 1; \
	done
	cd dist && sha256sum * > SHA256SUMS

vet:
	$(GO) vet ./...
	$(GO) vet -tags otlp ./internal/app
	cd client && $(GO) vet ./...
	cd cmd/queenctl && $(GO) vet ./...
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# go vet, then staticcheck (staticcheck.conf) on every module of the build: the main module,
# or each module a go.work uses. staticcheck is pinned in tools/go.mod, outside the broker's
# dependencies; -modfile refuses workspace mode, so the tool is built with GOWORK=off and
# `go tool -n` gives the binary, which then loads the packages as the go command does here.
LINT_PATTERNS = $$($(GO) list -m -f '{{.Dir}}/...')

#
# Both with -trimpath (added to the GOFLAGS go env gives), like make test: go vet and staticcheck
# then reuse their cached results of unchanged packages in a clone in any other folder (CI's fresh
# clone: 41-49 s -> 3 s here).
LINT_GOFLAGS = GOFLAGS="$$($(GO) env GOFLAGS) -trimpath"

lint:
	$(LINT_GOFLAGS) $(GO) vet $(LINT_PATTERNS)
	$(LINT_GOFLAGS) $(GO) vet -tags otlp ./internal/app
	sc="$$(GOWORK=off $(GO) tool -modfile=tools/go.mod -n staticcheck)" && $(LINT_GOFLAGS) "$$sc" $(LINT_PATTERNS)
	sc="$$(GOWORK=off $(GO) tool -modfile=tools/go.mod -n staticcheck)" && $(LINT_GOFLAGS) "$$sc" -tags otlp ./internal/app

# Runs the marked blocks of README.md, docs/client.md and docs/queenctl.md as a newcomer pastes
# them, in a fresh copy of the tree against a fresh broker on :6632 (which must be free); see the
# comment at the top of the script.
readme-test:
	bash scripts/readme-test.sh

# The dashboard (docs/api/dashboard.md): `make web` rebuilds internal/dashboard/dist from web/ with
# the lockfile (npm ci), `make web-check` fails when the committed build differs from the sources,
# `make e2e` runs the browser tests against real brokers (scripts/e2e.sh; Chromium is installed
# with apt when missing). `go build` never needs Node: the build is committed and embedded.
web:
	cd web && npm ci --no-audit --no-fund --loglevel=error && node build.mjs

web-check: web
	@git diff --exit-code --stat -- internal/dashboard/dist || { echo "internal/dashboard/dist differs from web/: run make web and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- internal/dashboard/dist)" || { echo "untracked files in internal/dashboard/dist: run make web and commit"; exit 1; }

e2e:
	bash scripts/e2e.sh
