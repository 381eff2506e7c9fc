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
 * package's node_modules, which is why the bundle is written under
 * `node_modules/.cache/kernelfarm/`, named by its content hash. Where it
 * cannot be built or written, workers start through tsx as before (logged).
 * Stack traces of a bundled worker map back to the sources with
 * NODE_OPTIONS=--enable-source-maps (the map sits beside the bundle).
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, readdir, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Logger } from "../protos/index.ts";

const WORKER_SOURCE = fileURLToPath(new URL("./worker/main.ts", import.meta.url));
const PACKAGE_ROOT = fileURLToPath(new URL("../", import.meta.url));
/** Bundles of older sources no agent started from for this long are deleted. */
const STALE_BUNDLE_MS = 7 * 24 * 3600_000;

export interface WorkerEntry {
  /** The module `fork` runs. */
  readonly script: string;
  readonly execArgv: readonly string[];
  /** false: the TypeScript sources through tsx. */
  readonly bundled: boolean;
}

function tsxEntry(): WorkerEntry {
  return { script: WORKER_SOURCE, execArgv: ["--import", import.meta.resolve("tsx")], bundled: false };
}

let entry: Promise<WorkerEntry> | undefined;

/** The worker entry of this process: built at the first call, shared by every pool after. */
export function workerEntry(log: Logger): Promise<WorkerEntry> {
  entry ??= bundleWorker().catch((err: Error) => {
    log.warn({ err: err.message }, "session workers start through tsx (slower): the worker bundle could not be made");
    return tsxEntry();
  });
  return entry;
}

async function bundleWorker(): Promise<WorkerEntry> {
  const cacheDir = join(PACKAGE_ROOT, "node_modules", ".cache", "kernelfarm");
  if (!existsSync(join(PACKAGE_ROOT, "node_modules"))) throw new Error(`no node_modules in ${PACKAGE_ROOT} to resolve the bundle's dependencies from`);
  const esbuild = await import("esbuild");
  const out = await esbuild.build({
    entryPoints: [WORKER_SOURCE],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    write: false,
    outdir: cacheDir,
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
  const script = join(cacheDir, `${name}.mjs`);
  if (!existsSync(script)) {
    await mkdir(cacheDir, { recursive: true });
    const code = js.text.replace(/\/\/# sourceMappingURL=\S+\s*$/, `//# sourceMappingURL=${name}.mjs.map\n`);
    // Write then rename: a concurrent agent never starts a half-written bundle.
    const tmp = `.${name}.${process.pid}`;
    await writeFile(join(cacheDir, `${tmp}.map`), map.contents);
    await rename(join(cacheDir, `${tmp}.map`), `${script}.map`);
    await writeFile(join(cacheDir, tmp), code);
    await rename(join(cacheDir, tmp), script);
  } else {
    const now = new Date();
    await utimes(script, now, now);
  }
  await removeStaleBundles(cacheDir);
  return { script, execArgv: [], bundled: true };
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
