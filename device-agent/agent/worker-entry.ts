/**
 * How the agent starts session workers. A board's worker boots at agent start
 * and again after every session that loaded foreign code (pool.ts), so a
 * tuning batch pays one boot per board and MetaSchedule's session-per-
 * candidate pattern one per candidate. Started through tsx, a worker spent
 * ~0.5 of its ~0.85 CPU-s start in the TypeScript loader, which runs every
 * import through a loader thread; so the agent bundles the worker's own code
 * once with esbuild (the compiler tsx itself uses) into one plain ES module
 * that Node starts in ~0.35 CPU-s (BENCHMARKS.md §8).
 *
 * Dependencies stay outside the bundle and resolve as usual from the
 * package's node_modules: the bundle is written under
 * `node_modules/.cache/kernelfarm/`, named by its content hash, or — where the
 * package is read-only (systemd's ProtectSystem=strict) — into the agent's
 * scratch folder beside a link to the package's node_modules. Where neither
 * works, workers start through tsx as before (logged). Stack traces of a
 * bundled worker map back to the sources with NODE_OPTIONS=--enable-source-maps
 * (the map sits beside the bundle).
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, readdir, rename, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import { join, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Logger } from "../../runtime/index.ts";

const WORKER_SOURCE = fileURLToPath(new URL("../worker/main.ts", import.meta.url));
const PACKAGE_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const PACKAGE_MODULES = join(PACKAGE_ROOT, "node_modules");
/** Bundles of older sources no agent started from for this long are deleted. */
const STALE_BUNDLE_MS = 7 * 24 * 3600_000;

export interface WorkerEntry {
  /** The module `fork` runs. */
  readonly script: string;
  readonly execArgv: readonly string[];
  /** false: the TypeScript sources through tsx. */
  readonly bundled: boolean;
}

/**
 * The program that runs a worker's node: this process's own binary, except
 * in an ARM agent bundle (deploy/agent-bundle), which starts Debian's node
 * through its bundled dynamic loader. There process.execPath is the loader,
 * which runs no script by itself, and the bundle's `node` launcher names
 * itself in KFARM_NODE.
 */
export function workerNode(): string {
  return process.env.KFARM_NODE || process.execPath;
}

/**
 * Debug only: node flags for every session worker, space-separated, from the
 * agent's KFARM_WORKER_NODE_ARGS — for those Node refuses in NODE_OPTIONS,
 * say `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile workers
 * (BENCHMARKS.md §26). The agent's operator sets it, never a tenant.
 */
export function workerDebugArgs(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.KFARM_WORKER_NODE_ARGS ?? "").split(" ").filter((a) => a !== "");
}

function tsxEntry(): WorkerEntry {
  return { script: WORKER_SOURCE, execArgv: ["--import", import.meta.resolve("tsx")], bundled: false };
}

/** Per scratch folder: agents of one process share an entry, unless each has its own folder (which may hold the bundle). */
const entries = new Map<string, Promise<WorkerEntry>>();

/**
 * The worker entry for an agent: built at its first call, shared by its
 * pools. `scratchDir` (the agent's own, writable, removed with it) holds the
 * bundle when the package cannot.
 */
export function workerEntry(log: Logger, scratchDir: string): Promise<WorkerEntry> {
  let entry = entries.get(scratchDir);
  if (!entry) {
    entry = bundleWorker([join(PACKAGE_MODULES, ".cache", "kernelfarm"), join(scratchDir, "worker")], log).catch((err: Error) => {
      log.warn({ err: err.message }, "session workers start through tsx (slower): the worker bundle could not be made");
      return tsxEntry();
    });
    entries.set(scratchDir, entry);
  }
  return entry;
}

/** Builds the bundle and writes it into the first of `dirs` that takes it. */
export async function bundleWorker(dirs: readonly string[], log?: Logger): Promise<WorkerEntry> {
  if (!existsSync(PACKAGE_MODULES)) throw new Error(`no node_modules in ${PACKAGE_ROOT} to resolve the bundle's dependencies from`);
  const esbuild = await import("esbuild");
  const out = await esbuild.build({
    entryPoints: [WORKER_SOURCE],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    write: false,
    outdir: dirs[0]!,
    sourcemap: "linked",
    logLevel: "silent",
    plugins: [
      {
        // Modules find their data files (the .proto files) next to themselves: keep their own URL.
        name: "keep-import-meta-url",
        setup(build) {
          build.onLoad({ filter: /\.ts$/ }, (args) => ({
            contents: readFileSync(args.path, "utf8").replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href)),
            loader: "ts",
          }));
        },
      },
    ],
  });
  const js = out.outputFiles.find((f) => f.path.endsWith(".js"));
  const map = out.outputFiles.find((f) => f.path.endsWith(".js.map"));
  if (!js || !map) throw new Error("esbuild produced no bundle");
  // Anything else of import.meta would now describe the bundle, not the module that wrote it.
  if (js.text.includes("import.meta")) throw new Error("a worker module uses import.meta beyond import.meta.url");
  const name = `worker-${createHash("sha256").update(js.contents).digest("hex").slice(0, 16)}`;
  const code = js.text.replace(/\/\/# sourceMappingURL=\S+\s*$/, `//# sourceMappingURL=${name}.mjs.map\n`);
  const failures: string[] = [];
  for (const dir of dirs) {
    try {
      const script = await writeBundle(dir, name, code, map.contents);
      if (failures.length > 0) log?.info({ dir, skipped: failures }, "worker bundle written to the agent's scratch folder (the package is read-only)");
      return { script, execArgv: [], bundled: true };
    } catch (err) {
      failures.push(`${dir}: ${(err as Error).message}`);
    }
  }
  throw new Error(`no folder took the worker bundle (${failures.join("; ")})`);
}

/** Writes the bundle into `dir` unless it is there; outside the package's node_modules, beside a link to them. */
async function writeBundle(dir: string, name: string, code: string, map: Uint8Array): Promise<string> {
  const script = join(dir, `${name}.mjs`);
  await mkdir(dir, { recursive: true });
  if (!resolve(dir).startsWith(PACKAGE_MODULES + sep)) {
    await symlink(PACKAGE_MODULES, join(dir, "node_modules"), "dir").catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "EEXIST") throw err;
    });
  }
  if (existsSync(script)) {
    const now = new Date();
    await utimes(script, now, now);
  } else {
    // Write then rename: a concurrent agent never starts a half-written bundle.
    const tmp = join(dir, `.${name}.${process.pid}`);
    await writeFile(`${tmp}.map`, map);
    await rename(`${tmp}.map`, `${script}.map`);
    await writeFile(tmp, code);
    await rename(tmp, script);
  }
  await removeStaleBundles(dir);
  return script;
}

/** Bundles are touched at every agent start: one untouched for a week belongs to sources long gone. */
async function removeStaleBundles(dir: string): Promise<void> {
  const cutoff = Date.now() - STALE_BUNDLE_MS;
  for (const file of await readdir(dir)) {
    if (!/^worker-[0-9a-f]+\.mjs$/.test(file)) continue;
    const path = join(dir, file);
    const s = await stat(path).catch(() => undefined);
    if (s && s.mtimeMs < cutoff) await Promise.all([rm(path, { force: true }), rm(`${path}.map`, { force: true })]);
  }
}
