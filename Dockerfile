# The dbduel image the Kubernetes manifests in deploy/ name (dbduel:latest): built in a Rust
# image, run from a small Debian one with only the CA certificates TLS needs.
#   docker build -t dbduel:latest .      (or podman build, buildah bud)
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked && strip target/release/dbduel

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --create-home --home-dir /work dbduel
COPY --from=build /src/target/release/dbduel /usr/local/bin/dbduel
USER dbduel
WORKDIR /work
ENTRYPOINT ["dbduel"]
CMD ["--help"]
