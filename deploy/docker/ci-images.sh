#!/usr/bin/env bash
# CI (from .ci/run): build the container images of deploy/docker/ with podman, from
# the agent bundle and a Debian base made here with debootstrap (no container
# registry is reachable), then start a tracker and a simulator agent from them
# and run sessions through them from this host (tests/containers.test.ts).
# The CUDA agent's image is built only: CI has no GPU.
#
# Each outcome is one line starting "containers:". Images that do not build, and
# sessions that fail, fail CI; a machine that cannot run containers at all skips
# the run (built images are still checked) and says why.
#
# What it takes on a machine like CI's (Debian bookworm VM, root, cgroups v1+v2
# hybrid, no CAP_SYS_RESOURCE), and why:
#   podman --runtime runc       crun refuses hybrid cgroups ("cgroups in hybrid mode not supported")
#   --ulimit nofile=…,nproc=…   podman asks for 1048576 open files, above what root may raise here
#   --network host              containers reach the farm on 127.0.0.1; no bridge, no private addresses
#   --health-interval disable   podman times health checks with systemd, which is not running here
set -euo pipefail
cd "$(dirname "$0")/../.."

BASE_IMAGE=localhost/kfarm-base:bookworm
WORK=$(mktemp -d /tmp/kfarm-ci-images.XXXXXX)
TRACKER=kfarm-ci-tracker-$$
AGENT=kfarm-ci-agent-$$
AGENT_NAME=ci-sim
READY_TIMEOUT_S=60

say() { echo "containers: $*"; }
since() { echo "$(($(date +%s) - $1)) s"; }

need=()
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || need+=(runc)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}"
fi
PODMAN=(podman --runtime runc)

cleanup() {
  status=$?
  for c in "$AGENT" "$TRACKER"; do
    if [ $status -ne 0 ] && "${PODMAN[@]}" container exists "$c" 2>/dev/null; then
      echo "--- podman logs $c"
      "${PODMAN[@]}" logs "$c" 2>&1 | tail -n 40 || true
    fi
    "${PODMAN[@]}" rm -f -t 5 "$c" >/dev/null 2>&1 || true
  done
  "${PODMAN[@]}" rmi -f kernelfarm/tracker kernelfarm/agent-sim kernelfarm/agent-cuda >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
# A timeout's TERM still removes the containers.
trap 'exit 143' TERM INT

# The base: what debian:bookworm-slim is, made from Debian's packages. Kept between
# runs on one machine (podman's storage), rebuilt where it is missing.
if ! "${PODMAN[@]}" image exists "$BASE_IMAGE"; then
  t0=$(date +%s)
  # The mirror apt uses on this machine, else Debian's own.
  mirror=$(sed -n 's|^URIs: *\([^ ]*/debian\)$|\1|p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
  debootstrap --variant=minbase bookworm "$WORK/rootfs" "${mirror:-http://deb.debian.org/debian}" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -n 20 "$WORK/debootstrap.log"; say "FAILED: debootstrap of the base image"; exit 1; }
  tar -C "$WORK/rootfs" -c . | "${PODMAN[@]}" import - "$BASE_IMAGE" >/dev/null
  rm -rf "$WORK/rootfs"
  say "made the base image $BASE_IMAGE with debootstrap --variant=minbase bookworm in $(since "$t0")"
fi

# The archive the Dockerfiles ADD (their BUNDLE default); xz -1 because CI only unpacks it.
t0=$(date +%s)
npm run --silent bundle:agent -- --level 1 >"$WORK/bundle.log" 2>&1 || { cat "$WORK/bundle.log"; say "FAILED: npm run bundle:agent"; exit 1; }
say "built the agent bundle in $(since "$t0")"

for image in tracker agent-sim agent-cuda; do
  t0=$(date +%s)
  if ! "${PODMAN[@]}" build --format docker --layers=false --build-arg "BASE=$BASE_IMAGE" \
      -f "deploy/docker/$image.Dockerfile" -t "kernelfarm/$image" . >"$WORK/build-$image.log" 2>&1; then
    tail -n 30 "$WORK/build-$image.log"
    say "FAILED: building kernelfarm/$image (deploy/docker/$image.Dockerfile)"
    exit 1
  fi
  # Docker's format keeps HEALTHCHECK (OCI's has no field for it). No intermediate images:
  # everything after the bundle's layer changes with each build anyway, and the cleanup leaves nothing.
  user=$("${PODMAN[@]}" image inspect --format '{{.Config.User}}' "kernelfarm/$image")
  health=$("${PODMAN[@]}" image inspect --format '{{if .Config.Healthcheck}}{{join .Config.Healthcheck.Test " "}}{{end}}' "kernelfarm/$image")
  # USER is the numeric non-root one (Kubernetes' runAsNonRoot can check only a number).
  [ "$user" = "10001:10001" ] || { say "FAILED: kernelfarm/$image runs as '$user', not 10001:10001"; exit 1; }
  [ -n "$health" ] || { say "FAILED: kernelfarm/$image has no HEALTHCHECK"; exit 1; }
  say "built kernelfarm/$image in $(since "$t0") (user $user)"
done

# Limits no higher than this shell's (root cannot raise them here); plenty for a tracker and an agent.
nofile=$(ulimit -Hn)
if [ "$nofile" = unlimited ] || [ "$nofile" -gt 65536 ]; then nofile=65536; fi
run_flags=(--network host --health-interval disable --ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096)

# Can this machine run a container at all? If not, say why and stop here: the images built.
if ! probe=$("${PODMAN[@]}" run --rm "${run_flags[@]}" --entrypoint /bin/true kernelfarm/tracker 2>&1); then
  say "skipped running the images: podman cannot start a container here: $(echo "$probe" | grep -v 'systemd' | tail -n 1)"
  exit 0
fi

# Starts container $1 from image $2 with the arguments that follow.
start() {
  local name=$1 image=$2
  shift 2
  "${PODMAN[@]}" run -d --name "$name" "${run_flags[@]}" "$image" "$@" >"$WORK/run-$name.log" 2>&1 \
    || { cat "$WORK/run-$name.log"; say "FAILED: podman run $image $*"; exit 1; }
}

# Prints the capture group of the first line of container $1's output that matches $2,
# once there is one; fails when the container exits first or after READY_TIMEOUT_S.
wait_for_line() {
  local container=$1 pattern=$2 deadline=$(($(date +%s) + READY_TIMEOUT_S)) found
  while :; do
    found=$("${PODMAN[@]}" logs "$container" 2>/dev/null | sed -n "s|$pattern|\\1|p" | head -n 1)
    if [ -n "$found" ]; then echo "$found"; return 0; fi
    if [ "$("${PODMAN[@]}" inspect --format '{{.State.Running}}' "$container")" != true ]; then
      say "FAILED: $container exited before it was ready" >&2; return 1
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then say "FAILED: $container not ready within $READY_TIMEOUT_S s" >&2; return 1; fi
    sleep 0.2
  done
}

# Runs the images' health check probe in container $1, as its HEALTHCHECK does, against URL $2.
probe_health() {
  "${PODMAN[@]}" exec "$1" /opt/kfarm-agent/node /opt/kfarm-agent/app/deploy/docker/healthcheck.mjs "$2" \
    || { say "FAILED: the health check probe in $1 ($2)"; exit 1; }
}

t0=$(date +%s)
# Port 0 everywhere: the processes say where they listen, on this host's loopback.
start "$TRACKER" kernelfarm/tracker tracker --port 0 --metrics-port 0 --data-port 0
tracker_addr=$(wait_for_line "$TRACKER" '^kfarm tracker listening on \([0-9.:]*\).*')
tracker_http=$(wait_for_line "$TRACKER" '^kfarm tracker http on http://\([0-9.:]*\)/.*')
start "$AGENT" kernelfarm/agent-sim agent --tracker "$tracker_addr" --name "$AGENT_NAME" \
  --board vta-sim:key=vta --board cpu:key=cpu --metrics-port 0 --data-port 0
agent_http=$(wait_for_line "$AGENT" '^kfarm agent metrics on http://\([0-9.:]*\)/metrics')
say "started kernelfarm/tracker ($tracker_addr) and kernelfarm/agent-sim in $(since "$t0")"

# Without a scheme, as the images' KFARM_HEALTH_URL: TLS first, then plain HTTP.
probe_health "$TRACKER" "$tracker_http/healthz"
probe_health "$AGENT" "$agent_http/healthz"

t0=$(date +%s)
if ! KFARM_CONTAINER_TRACKER=$tracker_addr KFARM_CONTAINER_AGENT=$AGENT_NAME \
    node --import tsx --test tests/containers.test.ts; then
  say "FAILED: sessions through the containers (tests/containers.test.ts)"
  exit 1
fi
say "ran sessions through kernelfarm/tracker and kernelfarm/agent-sim from the host in $(since "$t0") (VTA matrix_multiply and a CPU kernel; the agent's boards in the tracker's summary)"
say "kernelfarm/agent-cuda was built only: no GPU here"
