/**
 * The VTA boards the farm-level VTA suites (tests/vta-farm.test.ts,
 * tests/vta-sim.test.ts) run on, and what tells them apart. By default the
 * simulator and the mmio driver on the register-level device model; with
 * KFARM_VTA_BOARD set (`npm run test:pynq` on a Pynq board sets
 * `vta:pynq:key=vta`), that board alone.
 */

export interface VtaTestBoard {
  what: string;
  /** The agent's --board flag; its key must be `vta`. */
  flag: string;
  /** More agent flags: an FPGA board's session worker maps /dev/mem, so it runs as root. */
  agentArgs: string[];
  kind: "vta-sim" | "vta";
  /** Labels the board registers besides `vta` (the hardware name). */
  labels: Record<string, string>;
  /** The counter a run's time goes to: the simulator's cycle estimate, or the board's clock around the done poll. */
  timeCounter: "cycle_count" | "device_ns_total";
  /**
   * Whether its time shows virtual threads' latency hiding: the simulator's
   * cycle estimate and a real device do; the model's clock times the
   * simulator behind it, which runs the two threads one after the other.
   */
  showsLatencyHiding: boolean;
  /** How a stream with a DRAM address no argument holds fails: the simulator finds no buffer there, an mmio board cannot relocate it. */
  strayAddress: RegExp;
}

const MMIO_STRAY = /has no relocation; on a board every DRAM address must name an argument/;

export function vtaTestBoards(): VtaTestBoard[] {
  const flag = process.env.KFARM_VTA_BOARD;
  if (flag) {
    const device = /^vta:([a-z0-9]+)/.exec(flag)?.[1];
    if (!device) throw new Error(`KFARM_VTA_BOARD=${flag}: give a vta board flag, e.g. vta:pynq:key=vta`);
    return [
      {
        what: `the ${device} board`,
        flag,
        agentArgs: device === "model" ? [] : ["--worker-uids", "off"],
        kind: "vta",
        labels: { device },
        timeCounter: "device_ns_total",
        showsLatencyHiding: device !== "model",
        strayAddress: MMIO_STRAY,
      },
    ];
  }
  return [
    {
      what: "a simulator board",
      flag: "vta-sim:key=vta",
      agentArgs: [],
      kind: "vta-sim",
      labels: { sim: "true" },
      timeCounter: "cycle_count",
      showsLatencyHiding: true,
      strayAddress: /outside the buffers placed for this call/,
    },
    {
      what: "the mmio driver on the device model",
      flag: "vta:model:key=vta",
      agentArgs: [],
      kind: "vta",
      labels: { device: "model" },
      timeCounter: "device_ns_total",
      showsLatencyHiding: false,
      strayAddress: MMIO_STRAY,
    },
  ];
}
