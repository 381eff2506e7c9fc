#!/usr/bin/env bash
# A farm of two hosts on one Linux machine, to try deploy/ without a second
# machine: two network namespaces with addresses of their own, joined by a
# bridge that this machine's own namespace is on too (so host scripts, a
# browser and Grafana here reach both):
#
#   kfarm-head   10.77.0.1  the tracker (gRPC 9190, live view and /metrics 9191),
#                           and Prometheus (9090) when it is installed
#   kfarm-board  10.77.0.2  an agent with a VTA simulator (key vta) and a CPU
#                           board (key cpu), its /metrics on 9192
#   this host    10.77.0.254
#
#   sudo deploy/two-hosts.sh up       start it (from the checkout, after npm ci)
#   sudo deploy/two-hosts.sh status   what runs, and the farm's summary
#   sudo deploy/two-hosts.sh down     stop everything and remove the namespaces
#
# A private network of this machine: plaintext and no tokens (--insecure),
# which a real farm across machines must not do (deploy/README.md, systemd).
# Logs and Prometheus's data: $KFARM_TWO_HOSTS_DIR (default /tmp/kfarm-two-hosts).
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${KFARM_TWO_HOSTS_DIR:-/tmp/kfarm-two-hosts}
HEAD=kfarm-head
BOARD=kfarm-board
BRIDGE=kfarm-br0
NODE=${NODE:-$(command -v node)}

say() { echo "two-hosts: $*"; }
die() { echo "two-hosts: $*" >&2; exit 1; }

start() { # NAME NAMESPACE COMMAND…: runs in the namespace, logs to $DIR/NAME.log, pid in $DIR/NAME.pid
  local name=$1 ns=$2
  shift 2
  ip netns exec "$ns" "$@" >"$DIR/$name.log" 2>&1 &
  echo $! >"$DIR/$name.pid"
}

http_ok() { # URL: answers 2xx (node's fetch: no curl needed)
  "$NODE" -e "fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))" "$1"
}

wait_for() { # WHAT COMMAND…: up to 30 s
  local what=$1
  shift
  for _ in $(seq 300); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  die "$what did not come up within 30 s; logs in $DIR"
}

up() {
  [ "$(id -u)" = 0 ] || die "needs root (ip netns, a bridge)"
  [ -d node_modules ] || die "run npm ci in the checkout first"
  ip netns list | grep -q "^$HEAD\b" && die "already up ($0 down first)"
  mkdir -p "$DIR"
  ip link add "$BRIDGE" type bridge
  ip addr add 10.77.0.254/24 dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local n=1
  for ns in $HEAD $BOARD; do
    ip netns add "$ns"
    ip link add "kfarm-v$n" type veth peer name eth0 netns "$ns"
    ip link set "kfarm-v$n" master "$BRIDGE" up
    ip -n "$ns" addr add "10.77.0.$n/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    n=$((n + 1))
  done

  start tracker $HEAD "$NODE" bin/kfarm.mjs tracker --host 10.77.0.1 --port 9190 --metrics-port 9191 --insecure
  wait_for "the tracker" bash -c "exec 3<>/dev/tcp/10.77.0.1/9190"
  say "tracker on 10.77.0.1:9190, live view http://10.77.0.1:9191/"

  start agent $BOARD "$NODE" bin/kfarm.mjs agent --tracker 10.77.0.1:9190 --name board1 \
    --board vta-sim:key=vta --board cpu:key=cpu --metrics-port 9192 --metrics-host 0.0.0.0
  wait_for "the agent" http_ok http://10.77.0.2:9192/readyz
  say "agent board1 on 10.77.0.2 (vta-sim, cpu), metrics http://10.77.0.2:9192/metrics"

  if command -v prometheus >/dev/null; then
    cat >"$DIR/prometheus.yml" <<EOF
# deploy/prometheus/prometheus.yml's jobs, aimed at the two hosts.
global: { scrape_interval: 5s }
scrape_configs:
  - job_name: kfarm-tracker
    static_configs: [{ targets: ["10.77.0.1:9191"] }]
  - job_name: kfarm-agent
    static_configs: [{ targets: ["10.77.0.2:9192"] }]
EOF
    start prometheus $HEAD prometheus --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/prometheus-data" \
      --web.listen-address=10.77.0.1:9090
    wait_for "Prometheus" http_ok http://10.77.0.1:9090/-/ready
    say "Prometheus on http://10.77.0.1:9090 scraping both hosts"
  else
    say "no prometheus here (apt-get install prometheus): metrics only at /metrics"
  fi
  say "try: node bin/kfarm.mjs status --tracker 10.77.0.1:9190"
  say "Grafana: data source http://10.77.0.1:9090, dashboard deploy/grafana/dashboards/kernelfarm.json (deploy/README.md)"
}

down() {
  for name in prometheus agent tracker; do
    [ -f "$DIR/$name.pid" ] || continue
    kill "$(cat "$DIR/$name.pid")" 2>/dev/null || true
    rm -f "$DIR/$name.pid"
  done
  # Give them their SIGTERM shutdown, then remove what is left.
  for _ in $(seq 50); do
    ip netns pids $HEAD 2>/dev/null | grep -q . || ip netns pids $BOARD 2>/dev/null | grep -q . || break
    sleep 0.1
  done
  for ns in $HEAD $BOARD; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  say "down"
}

status() {
  for name in tracker agent prometheus; do
    if [ -f "$DIR/$name.pid" ] && kill -0 "$(cat "$DIR/$name.pid")" 2>/dev/null; then say "$name running (log $DIR/$name.log)"; else say "$name not running"; fi
  done
  "$NODE" bin/kfarm.mjs status --tracker 10.77.0.1:9190
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) die "usage: $0 up|status|down" ;;
esac
