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
# its own that the root go.mod replaces with ./client; queenctl is one too (cmd/queenctl).
COPY go.mod go.sum ./
COPY client/go.mod client/go.sum ./client/
COPY cmd/queenctl/go.mod cmd/queenctl/go.sum ./cmd/queenctl/
RUN --mount=type=cache,target=/go/pkg/mod \
    GOWORK=off go mod download && cd cmd/queenctl && GOWORK=off go mod download
COPY . .
ARG VERSION=dev
# --build-arg TAGS=otlp links the OTLP trace exporter into the broker (docs/operations.md, Tracing).
ARG TAGS=
# Static binaries: no cgo, no build paths, the version stamped as by `make release`. Without
# go.work each module builds from its own directory (-C), queenctl from cmd/queenctl.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOWORK=off go build -trimpath -tags "${TAGS}" -ldflags "-s -w -X main.version=${VERSION}" \
        -o /out/ ./cmd/queen && \
    CGO_ENABLED=0 GOWORK=off go build -C cmd/queenctl -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
        -o /out/ .

# The spool's directory, empty: the image stage has no shell to make it (see below).
RUN mkdir /out/state

# distroless/static: CA certificates (for PG_USE_SSL and JWT_JWKS_URL), /etc/passwd with the
# nonroot user (65532), tzdata, nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/queen /out/queenctl /usr/local/bin/
# The broker writes one thing, its spool (FILE_BUFFER_DIR: pushes accepted while PostgreSQL is
# away, replayed when it is back), and it writes it here, on a volume, so that `docker run
# --read-only` and Kubernetes' readOnlyRootFilesystem work. The directory exists in the image
# and belongs to the broker's user, because Docker fills a new volume from the image, owner
# included: without it the volume would belong to root and the broker would exit 1 with
# "permission denied". An anonymous volume goes with its container (docker run --rm); name one
# (-v queen-spool:/var/lib/queen) to keep spooled pushes across containers.
COPY --from=build --chown=65532:65532 /out/state /var/lib/queen
# Numeric, so that Kubernetes' runAsNonRoot can check it without runAsUser.
USER 65532:65532
WORKDIR /var/lib/queen
VOLUME /var/lib/queen
ENV FILE_BUFFER_DIR=/var/lib/queen/buffers
EXPOSE 6632
# No shell or curl here: queenctl, which is in the image, checks /health (exit 1 when unhealthy
# or unreachable). It calls port 6632: a container run with another PORT needs its own
# --health-cmd. Kubernetes ignores HEALTHCHECK; the manifests have probes of their own.
HEALTHCHECK --interval=20s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/queenctl", "--server", "http://127.0.0.1:6632", "--timeout", "4s", "health"]
ENTRYPOINT ["/usr/local/bin/queen"]
