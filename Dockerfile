# syntax=docker/dockerfile:1
#
# The pqsink image: a static binary on a distroless base that holds CA
# certificates, tzdata and a non-root user, and nothing else (no shell).
#
#   docker build -t pqsink .
#   docker run --rm -v $PWD/pqsink.yaml:/etc/pqsink/pqsink.yaml:ro pqsink
#
# The entry point is `pqsink`; the default command runs the sink on
# /etc/pqsink/pqsink.yaml. Any other subcommand works too:
#   docker run --rm pqsink version
# test/deploy_test.go checks that the Go version below is go.mod's, that
# .dockerignore keeps every package the binary needs, and that the entry
# point and command are real subcommands.

ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=0.1.0-dev
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/pqsink/pqsink/internal/version.Version=${VERSION}" \
      -o /out/pqsink ./cmd/pqsink

# distroless/static: /etc/ssl/certs, /usr/share/zoneinfo, /etc/passwd with
# the "nonroot" user (65532). The binary embeds tzdata as well.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/pqsink /usr/local/bin/pqsink
USER 65532:65532
# metrics.listen in deploy/compose/pqsink.yaml and deploy/kubernetes.
EXPOSE 9102
ENTRYPOINT ["pqsink"]
CMD ["run", "--config", "/etc/pqsink/pqsink.yaml"]
