/**
 * The iproute2 `ip` program that the multi-host bed (tests/multihost/) and
 * `spawnNode({ netns })` run: $KFARM_IP where set, else `ip` from PATH. A
 * machine without iproute2 (the GPU hosts that run the benchmarks) gets this
 * machine's `ip` packed with its libraries by bench/lib/pack-iproute2.sh:
 * `KFARM_IP=$PWD/agent-bundle-out/iproute2/ip`. Give an absolute path: the
 * bundle's launchers change folder.
 */
export const IP = process.env.KFARM_IP || "ip";
