#!/bin/sh
# A/B of source trees in one agent bundle (BENCHMARKS §21): the node binary and node_modules of one
# bundle, each commit's own sources laid over a copy of its app, so that only the code differs.
#
# Here (with git):   bench/ab/swap.sh pack OUT COMMIT...   writes OUT/COMMIT.tar.xz for each commit
# On the GPU host:   bench/ab/swap.sh run BUNDLE_DIR OUT SCRIPT ROUNDS COMMIT...
#                    runs bench/ab/SCRIPT (idle.ts, b2b.ts, phases.ts) once per commit per round,
#                    in an order rotated each round (a run's position must not favour one commit).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
case ${1:-} in
pack)
  out=$2; shift 2; mkdir -p "$out"
  for c in "$@"; do
    parts=$(git ls-tree --name-only "$c" | grep -E '^(protos|runtime|domain|host-sdk|tracker|device-agent|vta|bench|cli|index.ts|local-farm.ts|local-session.ts|server.ts|package.json)$')
    git archive --format=tar "$c" $parts tests/helpers | xz -1 > "$out/$c.tar.xz"
  done ;;
run)
  bundle=$2; out=$3; script=$4; rounds=$5; shift 5
  for c in "$@"; do
    rm -rf "/tmp/ab-$c"; cp -a "$bundle/app" "/tmp/ab-$c"; tar -xJf "$out/$c.tar.xz" -C "/tmp/ab-$c"
    mkdir -p "/tmp/ab-$c/bench/ab"; cp "$here"/*.ts "/tmp/ab-$c/bench/ab/"
  done
  order="$*"
  i=0
  while [ $i -lt "$rounds" ]; do
    for c in $order; do printf '%s ' "$c"; (cd "/tmp/ab-$c" && "$bundle/node" --import tsx "bench/ab/$script" 2>&1 | tail -1); done
    # Rotate: the first commit of this round runs last in the next.
    set -- $order; first=$1; shift; order="$* $first"
    i=$((i + 1))
  done ;;
*) echo "usage: $0 pack OUT COMMIT... | run BUNDLE_DIR OUT SCRIPT ROUNDS COMMIT..." >&2; exit 2 ;;
esac
