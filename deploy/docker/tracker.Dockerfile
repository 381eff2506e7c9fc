# kernelfarm tracker (image kernelfarm/tracker), made from the agent bundle
# (docs/agent-bundle.md): no npm and no network at build time beyond the base image.
# From the repository root (deploy/README.md, "Containers"):
#
#   npm run bundle:agent
#   docker build -f deploy/docker/tracker.Dockerfile -t kernelfarm/tracker .
#
# The ENTRYPOINT is the kfarm CLI: arguments are `tracker …` (or `token create …`).
ARG BASE=debian:bookworm-slim
FROM ${BASE}

# uid 10001: clear of the distribution's system users and of the 61000-61999 that
# a root agent hands its session workers. --no-log-init: no sparse lastlog sized for a high uid.
RUN groupadd --gid 10001 kfarm \
 && useradd --no-log-init --uid 10001 --gid kfarm --home-dir /var/lib/kfarm --no-create-home --shell /usr/sbin/nologin kfarm \
 && install -d -o kfarm -g kfarm -m 0700 /var/lib/kfarm

# ADD unpacks a local .tar.xz itself: the base image needs no xz (Debian's minbase has none).
# Files stay root's: the kfarm user reads and runs them, and cannot change them.
ARG BUNDLE=dist/kfarm-agent-linux-x64.tar.xz
ADD ${BUNDLE} /opt/

ENV PATH=/opt/kfarm-agent:$PATH \
    KFARM_LOG=info \
    KFARM_HEALTH_URL=127.0.0.1:9191/healthz
# The tokens file and its audit log (audit.jsonl beside it): mount a volume here.
WORKDIR /var/lib/kfarm
USER 10001:10001
# gRPC, HTTP (live view, /metrics, /healthz), data port (relay lanes).
EXPOSE 9190 9191 9193
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/opt/kfarm-agent/node", "/opt/kfarm-agent/app/deploy/docker/healthcheck.mjs"]
ENTRYPOINT ["/opt/kfarm-agent/kfarm"]
# As deploy/systemd/kfarm-tracker.service: TLS and tokens, from files mounted at these paths.
CMD ["tracker", "--host", "0.0.0.0", "--port", "9190", "--metrics-port", "9191", "--data-port", "9193", \
     "--tls-cert", "/etc/kfarm/tls/server.crt", "--tls-key", "/etc/kfarm/tls/server.key", \
     "--tokens", "/var/lib/kfarm/tokens.json"]
