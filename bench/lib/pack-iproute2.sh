#!/bin/sh
# Packs this machine's iproute2 `ip` for a host that has none (the GPU hosts
# the benchmarks run on have root, /dev/net/tun and cc, but no iproute2), so
# that the multi-host bed (tests/multihost/netbed.ts) runs there:
#
#   bench/lib/pack-iproute2.sh [IP [OUT]]      default: `ip` from PATH, agent-bundle-out/iproute2
#   KFARM_IP=$PWD/agent-bundle-out/iproute2/ip npm run bench -- tune-hosts
#
# OUT/ip      the wrapper to name in KFARM_IP (an absolute path: the bundle's launchers change folder)
# OUT/bin/ip  the binary (named ip: ip runs `ip link` when called as iplink, so its name matters)
# OUT/lib/    every library `ldd` lists for it, glibc and its loader included
# OUT/PACKED  where it came from
#
# The wrapper starts ip through the packed loader with --library-path (as the
# ARM agent bundles start node): ip gets the libraries it was built with,
# glibc included, whatever the host's glibc version. No LD_LIBRARY_PATH: it
# would pass to every program `ip netns exec` starts (the tracker, the
# agents, their workers), and a packed glibc in it would break them. The bed
# needs nothing else from iproute2: ip netns add/del/list/exec, ip link, ip
# addr; no tc (the wire does what netem would).
set -eu

root=$(CDPATH= cd -- "$(dirname -- "$0")/../.." && pwd)
src=${1:-$(command -v ip || true)}
out=${2:-$root/agent-bundle-out/iproute2}
if [ -z "$src" ]; then
  echo "pack-iproute2: no ip on PATH here; name one: $0 /path/to/ip [OUT]" >&2
  exit 1
fi
src=$(readlink -f -- "$src")

# ldd's lines: "libbpf.so.1 => /lib/x86_64-linux-gnu/libbpf.so.1 (0x…)", "/lib64/ld-linux-x86-64.so.2 (0x…)",
# "linux-vdso.so.1 (0x…)" (the kernel's: nothing to copy).
libs=$(ldd "$src" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
loader=$(ldd "$src" | awk '$1 ~ /^\// { print $1 }')
if [ -z "$loader" ]; then
  echo "pack-iproute2: $src names no dynamic loader (ldd: $(ldd "$src" 2>&1 | head -1)); a static ip needs no packing: KFARM_IP=$src" >&2
  exit 1
fi
for lib in $libs; do
  [ -e "$lib" ] || { echo "pack-iproute2: ldd lists $lib for $src, and it does not exist" >&2; exit 1; }
done

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
cp -- "$src" "$out/bin/ip"
for lib in $libs; do cp -L -- "$lib" "$out/lib/"; done
loader_name=$(basename -- "$loader")

cat >"$out/ip" <<EOF
#!/bin/sh
# iproute2's ip, packed by bench/lib/pack-iproute2.sh: run by the loader packed with it, on the libraries packed with it.
here=\$(CDPATH= cd -- "\$(dirname -- "\$0")" && pwd)
exec "\$here/lib/$loader_name" --library-path "\$here/lib" "\$here/bin/ip" "\$@"
EOF
chmod 755 "$out/ip" "$out/bin/ip" "$out/lib/$loader_name"

{
  echo "packed $(date -u +%Y-%m-%dT%H:%M:%SZ) from $src on $(uname -srm)"
  "$src" -V
  ldd --version 2>&1 | head -1
  ldd "$src"
} >"$out/PACKED"

# The packed ip, run as the bed runs it, with an empty environment: nothing of this machine's PATH or libraries' search.
if ! env -i "$out/ip" -V >/dev/null; then
  echo "pack-iproute2: the packed $out/ip does not run here" >&2
  exit 1
fi
echo "pack-iproute2: $(env -i "$out/ip" -V) in $out ($(ls "$out/lib" | wc -l) libraries, loader $loader_name); KFARM_IP=$out/ip"
