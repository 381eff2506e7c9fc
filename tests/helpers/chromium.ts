/**
 * Headless Chromium for page tests, driven over the DevTools protocol with
 * the `ws` client (no playwright): launch on a free debugging port, open a
 * page, evaluate expressions, wait for conditions, take screenshots.
 *
 * The browser is Debian's `chromium` (or $CHROMIUM); `findChromium()` says
 * whether there is one so a test can skip with a reason.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import WebSocket from "ws";

const CANDIDATES = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];
/** Flags that work in a container without a display, GPU or network. */
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
  "--hide-scrollbars",
  "--mute-audio",
];

/** The browser binary, or undefined when none is installed. */
export function findChromium(): string | undefined {
  const explicit = process.env.CHROMIUM;
  if (explicit) return explicit;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    for (const name of CANDIDATES) {
      try {
        accessSync(join(dir, name), constants.X_OK);
        return join(dir, name);
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

type Pending = { resolve: (v: Record<string, unknown>) => void; reject: (e: Error) => void; method: string };
type Listener = (params: Record<string, unknown>, sessionId: string | undefined) => void;

const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of live) killGroup(p, "SIGKILL");
});

function killGroup(proc: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-proc.pid!, signal);
  } catch {
    // already gone
  }
}

export class Browser {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Map<string, Set<Listener>>();

  private constructor(
    private readonly proc: ChildProcess,
    private readonly ws: WebSocket,
    private readonly profile: string,
    readonly stderr: () => string,
  ) {
    ws.on("message", (data: Buffer) => {
      const msg = JSON.parse(data.toString()) as {
        id?: number;
        result?: Record<string, unknown>;
        error?: { message: string };
        method?: string;
        params?: Record<string, unknown>;
        sessionId?: string;
      };
      if (msg.id !== undefined) {
        const p = this.pending.get(msg.id);
        if (!p) return;
        this.pending.delete(msg.id);
        if (msg.error) p.reject(new Error(`${p.method}: ${msg.error.message}`));
        else p.resolve(msg.result ?? {});
      } else if (msg.method) {
        for (const l of this.listeners.get(msg.method) ?? []) l(msg.params ?? {}, msg.sessionId);
      }
    });
    ws.on("close", () => {
      for (const p of this.pending.values()) p.reject(new Error(`${p.method}: the browser connection closed`));
      this.pending.clear();
    });
  }

  static async launch(binary = findChromium(), timeoutMs = 30_000): Promise<Browser> {
    if (!binary) throw new Error("no chromium on PATH (apt-get install -y chromium, or set CHROMIUM)");
    const profile = mkdtempSync(join(tmpdir(), "kfarm-chromium-"));
    // Its own process group: the zygote and renderers go with it.
    const proc = spawn(binary, [...FLAGS, `--user-data-dir=${profile}`, "--remote-debugging-port=0", "about:blank"], {
      stdio: ["ignore", "ignore", "pipe"],
      detached: true,
    });
    live.add(proc);
    proc.on("exit", () => live.delete(proc));
    let err = "";
    const endpoint = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`chromium did not start within ${timeoutMs} ms:\n${err.slice(-2000)}`)), timeoutMs);
      const onData = (c: Buffer) => {
        err += c.toString();
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
        if (m) done(undefined, m[1]);
      };
      const onExit = (code: number | null) => done(new Error(`chromium exited (code ${code}) before it was ready:\n${err.slice(-2000)}`));
      const done = (e?: Error, url?: string) => {
        clearTimeout(timer);
        proc.stderr!.off("data", onData);
        proc.off("exit", onExit);
        // Keep draining stderr so the browser never blocks on a full pipe.
        proc.stderr!.on("data", (c: Buffer) => (err = (err + c.toString()).slice(-20_000)));
        if (e) {
          killGroup(proc, "SIGKILL");
          rmSync(profile, { recursive: true, force: true });
          reject(e);
        } else resolve(url!);
      };
      proc.stderr!.on("data", onData);
      proc.once("exit", onExit);
    });
    const ws = new WebSocket(endpoint, { perMessageDeflate: false, maxPayload: 512 << 20 });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    return new Browser(proc, ws, profile, () => err);
  }

  send(method: string, params: Record<string, unknown> = {}, sessionId?: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        method,
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  }

  on(method: string, listener: Listener): () => void {
    let set = this.listeners.get(method);
    if (!set) this.listeners.set(method, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  /** A new tab of `width` × `height` CSS pixels showing `url`, loaded. */
  async open(url: string, width = 1440, height = 900): Promise<Page> {
    const { targetId } = (await this.send("Target.createTarget", { url: "about:blank" })) as { targetId: string };
    const { sessionId } = (await this.send("Target.attachToTarget", { targetId, flatten: true })) as { sessionId: string };
    const page = new Page(this, targetId, sessionId);
    await this.send("Runtime.enable", {}, sessionId);
    await this.send("Page.enable", {}, sessionId);
    await this.send("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile: false }, sessionId);
    const loaded = new Promise<void>((resolve) => {
      const off = this.on("Page.loadEventFired", (_p, s) => {
        if (s !== sessionId) return;
        off();
        resolve();
      });
    });
    const nav = (await this.send("Page.navigate", { url }, sessionId)) as { errorText?: string };
    if (nav.errorText) throw new Error(`navigating to ${url}: ${nav.errorText}`);
    await loaded;
    return page;
  }

  async close(): Promise<void> {
    const exited =
      this.proc.exitCode !== null || this.proc.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => this.proc.once("exit", () => r()));
    try {
      await this.send("Browser.close", {}, undefined, 3000);
    } catch {
      // it may close the connection before answering
    }
    this.ws.terminate();
    const timer = setTimeout(() => killGroup(this.proc, "SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
    // Renderers outlive the browser process for a moment; the group goes now.
    killGroup(this.proc, "SIGKILL");
    rmSync(this.profile, { recursive: true, force: true });
  }
}

export class Page {
  /** Uncaught exceptions and console.error calls in the page, as text. */
  readonly errors: string[] = [];

  constructor(
    private readonly browser: Browser,
    readonly targetId: string,
    readonly sessionId: string,
  ) {
    browser.on("Runtime.exceptionThrown", (p, s) => {
      if (s !== sessionId) return;
      const d = p.exceptionDetails as { text?: string; exception?: { description?: string } };
      this.errors.push(d.exception?.description ?? d.text ?? "exception");
    });
    browser.on("Runtime.consoleAPICalled", (p, s) => {
      if (s !== sessionId || p.type !== "error") return;
      this.errors.push((p.args as Array<{ value?: unknown; description?: string }>).map((a) => String(a.value ?? a.description)).join(" "));
    });
  }

  /** The value of `expression` in the page (awaited if a promise). */
  async evaluate<T>(expression: string): Promise<T> {
    const r = (await this.browser.send("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true }, this.sessionId)) as {
      result: { value?: T };
      exceptionDetails?: { text: string; exception?: { description?: string } };
    };
    if (r.exceptionDetails) throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value as T;
  }

  /** Polls `expression` until it is truthy; returns its value. */
  async waitFor<T>(what: string, expression: string, timeoutMs = 15_000): Promise<T> {
    const until = Date.now() + timeoutMs;
    let last: unknown;
    for (;;) {
      try {
        const v = await this.evaluate<T>(expression);
        if (v) return v;
      } catch (err) {
        last = err;
      }
      if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting in the page for ${what}${last ? ` (${(last as Error).message})` : ""}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** A PNG of the whole page (beyond the viewport) written to `path`; returns its size in bytes. */
  async screenshot(path: string): Promise<number> {
    const metrics = (await this.browser.send("Page.getLayoutMetrics", {}, this.sessionId)) as { cssContentSize: { width: number; height: number } };
    const { width, height } = metrics.cssContentSize;
    const shot = (await this.browser.send(
      "Page.captureScreenshot",
      { format: "png", captureBeyondViewport: true, clip: { x: 0, y: 0, width: Math.ceil(width), height: Math.ceil(height), scale: 1 } },
      this.sessionId,
    )) as { data: string };
    const png = Buffer.from(shot.data, "base64");
    writeFileSync(path, png);
    return png.length;
  }
}
