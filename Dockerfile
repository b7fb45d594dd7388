# idemcheck in a container, for teams that do not write Go (docs/install.md):
#   docker build --build-arg VERSION=v1.2.3 -t idemcheck .
#   docker run --rm --network host -v "$PWD/idemcheck.yaml:/cfg.yaml:ro" idemcheck run --config /cfg.yaml
FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# A static binary (no cgo, so no libc on the runtime image). The test
# TestStaticBinaryAsInDockerfile (cmd/idemcheck/dist_test.go) runs this very line.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/idemcheck ./cmd/idemcheck

# distroless/static: CA certificates (for https targets), tzdata and a
# non-root user, nothing else.
FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/idemcheck /usr/local/bin/idemcheck
ENTRYPOINT ["/usr/local/bin/idemcheck"]
CMD ["--help"]
