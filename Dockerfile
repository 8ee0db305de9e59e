# syntax=docker/dockerfile:1
#
# A static queen-go image: the broker and queenctl, no shell, running as an unprivileged user.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t queen-go .
#   docker run -p 6632:6632 -e DATABASE_URL=postgres://queen:secret@db:5432/queen queen-go
#
# The image needs DATABASE_URL (or the PG_* variables): the embedded PostgreSQL of a plain
# `queen` run starts the PostgreSQL server binaries installed on the machine (or installs
# Debian's package as root), and this image has neither binaries nor a package manager.
# Without a database setting the broker stops at once with an error saying so.
# See docs/deploy.md; this image was not built where this file was written (no Docker engine there).

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so they stay cached while the sources change. The client is a module of
# its own that the root go.mod replaces with ./client.
COPY go.mod go.sum ./
COPY client/go.mod client/go.sum ./client/
RUN --mount=type=cache,target=/go/pkg/mod \
    GOWORK=off go mod download
COPY . .
ARG VERSION=dev
# Static binaries: no cgo, no build paths, the version stamped as by `make release`.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOWORK=off go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
        -o /out/ ./cmd/queen ./cmd/queenctl

# distroless/static: CA certificates (for PG_USE_SSL and JWT_JWKS_URL), /etc/passwd with the
# nonroot user (65532), tzdata, nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/queen /out/queenctl /usr/local/bin/
USER nonroot:nonroot
EXPOSE 6632
ENTRYPOINT ["/usr/local/bin/queen"]
