/** measure()'s progress line on stderr: done, failed and running candidates, the rate, and an ETA when the total is known. */
export class Progress {
  private readonly t0 = Date.now();
  done = 0;
  failed = 0;
  running = 0;
  constructor(
    private readonly total: number | undefined,
    private readonly on: boolean,
  ) {}
  /** Redraws the line in place (a carriage return, no newline), so a terminal shows one line however long the batch. */
  draw(): void {
    if (!this.on) return;
    const s = (Date.now() - this.t0) / 1e3;
    const rate = this.done / Math.max(s, 1e-3);
    const eta = this.total === undefined ? "" : ` · ETA ${(rate > 0 ? (this.total - this.done) / rate : 0).toFixed(0)} s`;
    process.stderr.write(
      `\r measure: ${this.done}${this.total !== undefined ? `/${this.total}` : ""} done, ${this.failed} failed, ${this.running} running · ${rate.toFixed(1)}/s${eta}   `,
    );
  }
  /** Ends the line, so what the script prints next starts on its own. */
  end(): void {
    if (this.on) process.stderr.write("\n");
  }
}
