# switchboard's container image: the gateway for a team, run as several replicas on one
# PostgreSQL store behind a load balancer (README, "Several replicas behind a load balancer";
# Kubernetes manifests in deploy/kubernetes/).
#
#   docker build -t switchboard .
#   docker run -p 7342:7342 -v $PWD/config.json:/etc/switchboard/config.json:ro switchboard \
#     --config /etc/switchboard/config.json gateway --http 0.0.0.0:7342 --allow-remote
#
# Two stages: the binary is built with the toolchain and the lock file of the repository (the
# same `switchboard` binary README's first command builds, in release), and the image holds that
# binary alone on distroless's glibc base (CA certificates for TLS; no shell, no package
# manager), run as its non-root user. Servers the gateway starts as processes (npx, uvx, …) are
# not in it: build an image FROM this one with their runtimes, or give the gateway remote servers.

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p switchboard-cli --bin switchboard \
 && strip target/release/switchboard

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/switchboard /usr/local/bin/switchboard
# The data folder (tokens of the host's own logins, the local token, spill files): with a team's
# store the people's state is in PostgreSQL, and this may be an empty volume.
ENV SWITCHBOARD_DATA_DIR=/var/lib/switchboard
USER nonroot:nonroot
EXPOSE 7342
ENTRYPOINT ["/usr/local/bin/switchboard"]
CMD ["gateway", "--http", "0.0.0.0:7342", "--allow-remote"]
