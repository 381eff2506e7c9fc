#!/bin/sh
# The conv2d and SGEMM tuning runs against the vendor libraries on one GPU
# host, from the kernelfarm agent bundle (no Node.js needed there):
#
#   tar xJf kfarm-agent-linux-x64.tar.xz && kfarm-agent/app/examples/tune-on-gpu.sh OUT_DIR
#
# Starts a tracker and an agent with the host's first GPU (cuda:0, key cuda)
# on loopback, runs examples/cudnn-baseline.py (PyTorch: cuDNN and cuBLAS),
# then examples/tune-cuda-conv2d.ts over the four 3x3 layers of ResNet-18
# and examples/tune-cuda-gemm.ts at 4096^3, and leaves their output, JSON and
# plots in OUT_DIR (the SGEMM runs in OUT_DIR/sgemm-SIZE). CONV_CANDIDATES,
# CONV_LAYERS, GEMM_CANDIDATES, GEMM_SIZES (space-separated) and PYTHON change
# what runs; 0 candidates skips a tuner.
set -eu
OUT=$(mkdir -p "${1:?usage: tune-on-gpu.sh OUT_DIR}" && cd "$1" && pwd)
APP=$(cd "$(dirname "$0")/.." && pwd)
NODE="$APP/../node"
[ -x "$NODE" ] || NODE=node
PORT=${PORT:-9390}
cd "$APP"
"$NODE" bin/kfarm.mjs tracker --port "$PORT" > "$OUT/tracker.log" 2>&1 &
TRACKER=$!
"$NODE" bin/kfarm.mjs agent --tracker "127.0.0.1:$PORT" --board cuda:0:key=cuda --name gpu > "$OUT/agent.log" 2>&1 &
AGENT=$!
trap 'kill $AGENT $TRACKER 2>/dev/null; wait 2>/dev/null' EXIT INT TERM
echo "== vendor libraries (cuDNN, cuBLAS)"
GEMM_SIZES=${GEMM_SIZES:-4096}
${PYTHON:-python3} examples/cudnn-baseline.py --out "$OUT/baseline.json" --gemm "$(echo $GEMM_SIZES | tr ' ' ,)" | tee "$OUT/baseline.txt"
if [ "${CONV_CANDIDATES:-200}" -gt 0 ]; then
  echo "== conv2d: direct and Winograd templates, ${CONV_CANDIDATES:-200} candidates per layer"
  "$NODE" --import tsx examples/tune-cuda-conv2d.ts --tracker "127.0.0.1:$PORT" --key cuda --baseline "$OUT/baseline.json" \
    --candidates "${CONV_CANDIDATES:-200}" ${CONV_LAYERS:+--layers "$CONV_LAYERS"} --out "$OUT" | tee "$OUT/conv2d.txt"
fi
if [ "${GEMM_CANDIDATES:-64}" -gt 0 ]; then
  for SIZE in $GEMM_SIZES; do
    echo "== SGEMM $SIZE^3, ${GEMM_CANDIDATES:-64} candidates"
    "$NODE" --import tsx examples/tune-cuda-gemm.ts --tracker "127.0.0.1:$PORT" --key cuda --size "$SIZE" --baseline "$OUT/baseline.json" \
      --candidates "${GEMM_CANDIDATES:-64}" --out "$OUT/sgemm-$SIZE" | tee "$OUT/sgemm-$SIZE.txt"
  done
fi
