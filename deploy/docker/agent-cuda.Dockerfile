# kernelfarm agent for CUDA boards (image kernelfarm/agent-cuda), made from the agent
# bundle (docs/agent-bundle.md): no npm and no network at build time beyond the base
# image. From the repository root (deploy/README.md, "Containers"):
#
#   npm run bundle:agent
#   docker build -f deploy/docker/agent-cuda.Dockerfile -t kernelfarm/agent-cuda .
#   docker run --gpus all kernelfarm/agent-cuda agent --tracker … --board cuda:all:key=h100 …
#
# No CUDA toolkit: the agent needs only the driver's libcuda.so.1 (and libnvidia-ml.so.1
# for clocks), which the NVIDIA container toolkit mounts from the host. Those link only
# glibc (libc, libm, libdl, libpthread, librt), so any glibc base will do; the toolkit
# runs the image's ldconfig to make them found.
ARG BASE=debian:bookworm-slim
FROM ${BASE}

# uid 10001: clear of the distribution's system users and of the 61000-61999 that
# a root agent hands its session workers. --no-log-init: no sparse lastlog sized for a high uid.
RUN groupadd --gid 10001 kfarm \
 && useradd --no-log-init --uid 10001 --gid kfarm --home-dir /var/lib/kfarm --no-create-home --shell /usr/sbin/nologin kfarm \
 && install -d -o kfarm -g kfarm -m 0700 /var/lib/kfarm

# ADD unpacks a local .tar.xz itself: the base image needs no xz (Debian's minbase has none).
# Files stay root's: the agent and its session workers read and run them, and cannot change them.
ARG BUNDLE=dist/kfarm-agent-linux-x64.tar.xz
ADD ${BUNDLE} /opt/

# What the toolkit mounts: compute is libcuda, utility is NVML (clocks with every timing).
# Which GPUs is the run's choice (--gpus, NVIDIA_VISIBLE_DEVICES, a CDI device, the
# Kubernetes device plugin), so none are named here.
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    PATH=/opt/kfarm-agent:$PATH \
    KFARM_LOG=info \
    KFARM_HEALTH_URL=127.0.0.1:9192/healthz
WORKDIR /var/lib/kfarm
USER 10001:10001
# Metrics (/metrics, /healthz), the direct lane (--data-port 9194 --no-standby).
EXPOSE 9192 9194
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/opt/kfarm-agent/node", "/opt/kfarm-agent/app/deploy/docker/healthcheck.mjs"]
ENTRYPOINT ["/opt/kfarm-agent/kfarm"]
# The tracker and boards come from a config file mounted here (deploy/agent.example.yaml).
CMD ["agent", "--config", "/etc/kfarm/agent.yaml"]
