#!/usr/bin/env bash
# Checks the units in this folder with `systemd-analyze verify` (CI runs it from .ci/run).
#
# verify loads a unit as the manager would: it fails on a missing section, an ExecStart=
# that is not an absolute path to an executable, a dependency that does not exist. It only
# warns, and exits 0, on an unknown key or a value it cannot parse ("…, ignoring"): so any
# line it prints fails the check.
#
# The units are checked as installed on a host that has what they expect (deploy/README.md,
# "systemd"): node at /usr/bin/node. A stand-in root gets this machine's own units (the
# targets ours name), an empty executable at each such path and our units, so a machine
# without that install (CI, a laptop with node elsewhere) checks the units themselves.
# User= is not checked by verify; the account is the operator's to create.
set -euo pipefail
cd "$(dirname "$0")"

# What the units run, as an install provides it.
INSTALLED_EXECUTABLES=(/usr/bin/node)

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/etc/systemd/system" "$root/usr/lib/systemd"
cp -a /usr/lib/systemd/system "$root/usr/lib/systemd/"
for exe in "${INSTALLED_EXECUTABLES[@]}"; do install -D -m 0755 /dev/null "$root$exe"; done
units=(*.service)
cp "${units[@]}" "$root/etc/systemd/system/"

# --generators=no: the machine's generators would add its own units (and need privileges);
# --recursive-errors=no: only our units' errors, not those of the targets they name.
status=0
out=$(systemd-analyze verify --root="$root" --man=no --generators=no --recursive-errors=no "${units[@]}" 2>&1) || status=$?
if [ $status -ne 0 ] || [ -n "$out" ]; then
  echo "${out//$root\/etc\/systemd\/system\//deploy/systemd/}"
  echo "systemd units: FAILED: systemd-analyze verify found problems in deploy/systemd (exit code $status)"
  exit 1
fi
echo "systemd units: ${units[*]} verified ($(systemd-analyze --version | head -n 1))"
