/**
 * `npm run bundle:agent`: one archive that runs a kernelfarm agent (and the
 * GPU tests and benchmarks) on a Linux x86-64 host with glibc and nothing
 * else — no Node.js, no npm, no network.
 *
 * The archive holds one folder, `kfarm-agent/`:
 *
 *   node          the Node binary running this script (process.execPath), copied
 *   kfarm         launchers (POSIX sh) that use only ./node:
 *   test-gpu        `kfarm …`, `npm run test:gpu`, `npm run bench -- …`
 *   bench
 *   BUNDLE.json   what was bundled (versions, commit, the glibc node was built against)
 *   app/          the package: its git files (tracked, and untracked ones not
 *                 ignored) and its production dependency tree for linux-x64
 *
 * The package sits in `app/` because it has a `bench/` folder of its own and
 * the `bench` launcher must not collide with it.
 *
 *   node --import tsx deploy/agent-bundle/build.ts [--out FILE.tar.xz] [--no-compress] [--level N]
 *
 * The stage is `kfarm-agent/` in the archive's folder (default dist/).
 */
import { execFileSync, spawnSync } from "node:child_process";
import {
  chmodSync, copyFileSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync,
  renameSync, rmSync, statSync, symlinkSync, writeFileSync,
} from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

/** The package root: this file is deploy/agent-bundle/build.ts. */
const PACKAGE_ROOT = fileURLToPath(new URL("../../", import.meta.url));

export const BUNDLE_DIR_NAME = "kfarm-agent";
/** Where the package goes inside the bundle folder. */
export const APP_DIR_NAME = "app";
/** Marks a folder this script may delete and rebuild: written first as a placeholder, filled in last. */
export const BUNDLE_INFO_FILE = "BUNDLE.json";
export const DEFAULT_ARCHIVE = join(PACKAGE_ROOT, "dist", `${BUNDLE_DIR_NAME}-linux-x64.tar.xz`);
/** xz -6, measured on a 2-vCPU VM: 27.8 MiB in 38 s (-3: 31.1 MiB in 27 s; -9: 27.5 MiB in 90 s and 3x the memory). */
export const DEFAULT_XZ_LEVEL = 6;
/** About twice the archive's usual size: a bundle beyond it carries something it should not. */
export const MAX_ARCHIVE_BYTES = 60 * 1024 * 1024;
/** A git file bigger than this is a fixture or a capture nobody runs from the bundle: left out, and said so. */
const MAX_APP_FILE_BYTES = 8 * 1024 * 1024;
/** Git files of these kinds are documentation pictures: left out. */
const SKIPPED_APP_EXTENSIONS = new Set([".png", ".jpg", ".jpeg", ".gif", ".webp", ".ico", ".pdf"]);

/** Files of dependencies that nothing loads at run time: docs, source maps, type declarations, native sources. */
const PRUNED_DEP_FILE = /(\.(md|markdown|map|d\.ts|d\.mts|d\.cts|tsbuildinfo|c|cc|cpp|cxx|h|hh|hpp|inc|gyp|gypi)|^CMakeLists\.txt|^\.(npmignore|eslintrc.*|prettierrc.*|editorconfig|travis\.yml|nycrc.*))$/i;
/** Folders directly under a dependency's root that nothing loads at run time (kept if package.json points into one). */
const PRUNED_DEP_DIRS = new Set(["test", "tests", "__tests__", "example", "examples", "bench", "benchmark", "benchmarks", "doc", "docs", ".github"]);

export interface BundleOptions {
  /** The archive to write; the stage is `kfarm-agent/` in its folder. */
  archivePath?: string;
  /** false: stage only (tests). */
  compress?: boolean;
  /** xz preset, 0–9. */
  level?: number;
}

export interface ResolvedBundleOptions {
  readonly archivePath: string;
  readonly stageDir: string;
  readonly compress: boolean;
  readonly level: number;
}

/** A failure with a message meant for the person running the build (no stack trace). */
export class BundleError extends Error {
  override readonly name = "BundleError";
}

export function resolveBundleOptions(opts: BundleOptions = {}): ResolvedBundleOptions {
  const archivePath = resolve(opts.archivePath ?? DEFAULT_ARCHIVE);
  if (!archivePath.endsWith(".tar.xz")) throw new BundleError(`--out must name a .tar.xz file, got ${archivePath}`);
  const level = opts.level ?? DEFAULT_XZ_LEVEL;
  if (!Number.isInteger(level) || level < 0 || level > 9) throw new BundleError(`--level must be an xz preset 0..9, got ${level}`);
  return { archivePath, stageDir: join(dirname(archivePath), BUNDLE_DIR_NAME), compress: opts.compress ?? true, level };
}

interface NodeReportHeader {
  glibcVersionRuntime?: string;
  glibcVersionCompiler?: string;
}

/** The glibc the running node was built against (the least a host needs), or undefined on musl. */
function nodeGlibc(): string | undefined {
  const report = process.report?.getReport() as { header?: NodeReportHeader } | undefined;
  return report?.header?.glibcVersionCompiler;
}

/**
 * Why this machine cannot build the bundle, or undefined if it can: the bundle
 * carries the running node binary, so that binary must be a self-contained
 * linux-x64 glibc build.
 */
export function bundleRefusal(): string | undefined {
  const here = `${process.platform}-${process.arch}`;
  if (here !== "linux-x64") {
    return `the agent bundle is for linux-x64 and carries the running node binary; this is ${here}: build it on a linux-x64 machine`;
  }
  if (!nodeGlibc()) return `the running node (${process.execPath}) is not a glibc build (musl?): it would not run on a glibc host`;
  const vars = (process.config.variables ?? {}) as unknown as Record<string, unknown>;
  const shared = Object.keys(vars).filter((k) => k.startsWith("node_shared") && vars[k] === true);
  if (shared.length > 0) {
    return `the running node (${process.execPath}) loads shared libraries a GPU host may lack (${shared.join(", ")}): ` +
      "build with an official nodejs.org or NodeSource build";
  }
  return undefined;
}

// ---------------------------------------------------------------- the package's own files

/** The package's git files: tracked ones still present, plus untracked ones git does not ignore. */
function appFiles(): { files: string[]; untracked: number } {
  const git = (...args: string[]) => {
    try {
      return execFileSync("git", args, { cwd: PACKAGE_ROOT, maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "pipe"] }).toString();
    } catch (err) {
      throw new BundleError(`the bundle takes the package's files from git, and \`git ${args.join(" ")}\` failed in ${PACKAGE_ROOT}: ${(err as Error).message}`);
    }
  };
  const tracked = git("ls-files", "-z", "--cached").split("\0").filter(Boolean);
  // Work in progress is rarely committed when a bundle is built for a test run: take it too.
  const untracked = git("ls-files", "-z", "--others", "--exclude-standard").split("\0").filter(Boolean);
  // node_modules is the dependency walk's: a symlinked one (a git worktree's) is no folder to `node_modules/` in .gitignore,
  // and copied as a link it would have the dependency copy write through it into the real one.
  const files = [...new Set([...tracked, ...untracked])]
    .filter((f) => f !== "node_modules" && !f.startsWith("node_modules/") && existsSync(join(PACKAGE_ROOT, f))).sort();
  return { files, untracked: untracked.length };
}

// ---------------------------------------------------------------- production dependencies

interface PackageJson {
  name?: string;
  version?: string;
  main?: unknown;
  exports?: unknown;
  bin?: unknown;
  os?: string[];
  cpu?: string[];
  libc?: string[];
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

export interface DependencyPackage {
  readonly name: string;
  readonly version: string;
  /** Its folder, relative to the package root (node_modules/…). */
  readonly path: string;
}

function readPackageJson(dir: string): PackageJson {
  return JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as PackageJson;
}

/** npm's `os` / `cpu` / `libc` rule: a list of allowed values, or of `!blocked` ones. */
function allows(list: string[] | undefined, value: string): boolean {
  if (!list || list.length === 0) return true;
  if (list.includes(`!${value}`)) return false;
  const allowed = list.filter((v) => !v.startsWith("!"));
  return allowed.length === 0 || allowed.includes(value);
}

/** Node's lookup of `name` from `fromDir`, stopping at the package root (the bundle holds nothing above it). */
function locate(name: string, fromDir: string): string | undefined {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (resolve(dir) === resolve(PACKAGE_ROOT) || dirname(dir) === dir) return undefined;
  }
}

/**
 * The dependency tree that `npm ci --omit=dev` installs for linux-x64 glibc,
 * found in the local node_modules: dependencies, optional ones that are
 * installed and fit the platform, peers. Type-only `@types/*` are left out.
 */
export function productionDependencies(): DependencyPackage[] {
  const found = new Map<string, DependencyPackage>();
  const queue: Array<{ dir: string; pkg: PackageJson }> = [{ dir: PACKAGE_ROOT, pkg: readPackageJson(PACKAGE_ROOT) }];
  for (let next = queue.shift(); next; next = queue.shift()) {
    const { dir: from, pkg } = next;
    const wanted: Array<[name: string, optional: boolean]> = [
      ...Object.keys(pkg.dependencies ?? {}).map((n): [string, boolean] => [n, false]),
      ...Object.keys(pkg.optionalDependencies ?? {}).map((n): [string, boolean] => [n, true]),
      ...Object.keys(pkg.peerDependencies ?? {}).map((n): [string, boolean] => [n, pkg.peerDependenciesMeta?.[n]?.optional ?? false]),
    ];
    for (const [name, optional] of wanted) {
      if (name.startsWith("@types/")) continue;
      const dir = locate(name, from);
      if (!dir) {
        if (optional) continue;
        throw new BundleError(`${name}, a dependency of ${pkg.name ?? "the package"}, is not installed under ${PACKAGE_ROOT}: run \`npm ci\` first`);
      }
      const path = relative(PACKAGE_ROOT, dir);
      if (found.has(path)) continue;
      const dep = readPackageJson(dir);
      if (!allows(dep.os, "linux") || !allows(dep.cpu, "x64") || !allows(dep.libc, "glibc")) continue;
      found.set(path, { name, version: dep.version ?? "?", path });
      queue.push({ dir, pkg: dep });
    }
  }
  return [...found.values()].sort((a, b) => a.path.localeCompare(b.path));
}

// ---------------------------------------------------------------- copying

/** What went into one part of the stage. */
interface Tally {
  files: number;
  bytes: number;
  /**
   * Sources with several hard links, by device:inode, and their first copy in the
   * stage (shared by the parts of one build). esbuild's install script hard-links
   * its binary into esbuild/bin: the stage keeps that one file, and tar stores it
   * once, instead of two 11 MB copies.
   */
  readonly linkedCopies: Map<string, string>;
}

function copyOne(src: string, dst: string, tally: Tally): void {
  mkdirSync(dirname(dst), { recursive: true });
  const st = lstatSync(src);
  const inode = st.nlink > 1 ? `${st.dev}:${st.ino}` : undefined;
  const firstCopy = inode ? tally.linkedCopies.get(inode) : undefined;
  if (st.isSymbolicLink()) {
    symlinkSync(readlinkSync(src), dst);
  } else if (firstCopy) {
    linkSync(firstCopy, dst);
  } else {
    copyFileSync(src, dst); // keeps the mode: executables stay executable
    if (inode) tally.linkedCopies.set(inode, dst);
    tally.bytes += st.size;
  }
  tally.files++;
}

/** Copies a dependency's folder without its nested node_modules (those are packages of their own) or what nothing loads. */
function copyDependency(srcRoot: string, dstRoot: string, tally: Tally): void {
  const pkg = readPackageJson(srcRoot);
  const entryPoints = JSON.stringify([pkg.main, pkg.exports, pkg.bin]);
  // A compiled package's TypeScript sources (grpc-js ships src/*.ts next to build/) are never loaded.
  const keepTs = /\.[mc]?ts"/.test(entryPoints);
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(srcRoot, rel), { withFileTypes: true })) {
      const relPath = rel ? join(rel, entry.name) : entry.name;
      if (entry.isDirectory()) {
        if (entry.name === "node_modules") continue;
        if (!rel && PRUNED_DEP_DIRS.has(entry.name) && !entryPoints.includes(`${entry.name}/`)) continue;
        walk(relPath);
      } else if (!PRUNED_DEP_FILE.test(entry.name) && (keepTs || !/\.[mc]?ts$/.test(entry.name))) {
        copyOne(join(srcRoot, relPath), join(dstRoot, relPath), tally);
      }
    }
  };
  walk("");
}

// ---------------------------------------------------------------- launchers

/** Sets DIR to the bundle folder, following symlinks to the launcher; needs nothing but sh (and readlink for a symlinked launcher). */
const FIND_DIR = `self=$0
while [ -L "$self" ]; do
  link=$(readlink "$self") || exit 1
  case $link in /*) self=$link ;; *) self=\${self%/*}/$link ;; esac
done
case $self in */*) DIR=\${self%/*} ;; *) DIR=. ;; esac
DIR=$(cd -P -- "$DIR" && pwd -P) || exit 1`;

const LAUNCHERS: Record<string, string> = {
  kfarm: `#!/bin/sh
# kfarm from the kernelfarm agent bundle; runs on the node binary next to this file only.
${FIND_DIR}
exec "$DIR/node" "$DIR/${APP_DIR_NAME}/bin/kfarm.mjs" "$@"
`,
  "test-gpu": `#!/bin/sh
# npm run test:gpu, from the kernelfarm agent bundle. Arguments go to node before the
# test files, e.g. ./test-gpu --test-name-pattern=sgemm
${FIND_DIR}
cd "$DIR/${APP_DIR_NAME}" || exit 1
for f in tests/gpu/*.test.ts; do
  if [ ! -e "$f" ]; then
    echo "test-gpu: no tests/gpu/*.test.ts in $DIR/${APP_DIR_NAME}: this bundle was built without GPU tests" >&2
    exit 1
  fi
  break
done
exec "$DIR/node" --import tsx --test --test-concurrency=1 "$@" tests/gpu/*.test.ts
`,
  bench: `#!/bin/sh
# npm run bench -- ARGS, from the kernelfarm agent bundle, e.g. ./bench cuda
${FIND_DIR}
cd "$DIR/${APP_DIR_NAME}" || exit 1
exec "$DIR/node" --import tsx bench/run.ts "$@"
`,
};

// ---------------------------------------------------------------- the build

export interface BundleResult {
  readonly stageDir: string;
  readonly stageBytes: number;
  readonly stageFiles: number;
  readonly archivePath?: string;
  readonly archiveBytes?: number;
}

const MiB = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
const seconds = (t0: number) => `${((performance.now() - t0) / 1000).toFixed(1)} s`;

function gitRevision(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: PACKAGE_ROOT, stdio: ["ignore", "pipe", "ignore"] }).toString().trim();
    const dirty = execFileSync("git", ["status", "--porcelain"], { cwd: PACKAGE_ROOT, stdio: ["ignore", "pipe", "ignore"] }).toString().trim();
    return dirty ? `${head} + working tree changes` : head;
  } catch {
    return "unknown";
  }
}

/** Removes an earlier stage; refuses to delete a folder this script did not make. */
function clearStage(stageDir: string): void {
  if (!existsSync(stageDir)) return;
  if (!existsSync(join(stageDir, BUNDLE_INFO_FILE)) && readdirSync(stageDir).length > 0) {
    throw new BundleError(`${stageDir} exists and is not an agent bundle stage (no ${BUNDLE_INFO_FILE}): remove it or choose another --out`);
  }
  rmSync(stageDir, { recursive: true, force: true });
}

export function buildBundle(opts: BundleOptions = {}, log: (line: string) => void = console.log): BundleResult {
  const refusal = bundleRefusal();
  if (refusal) throw new BundleError(refusal);
  const o = resolveBundleOptions(opts);
  const t0 = performance.now();
  clearStage(o.stageDir);
  mkdirSync(o.stageDir, { recursive: true });
  writeFileSync(join(o.stageDir, BUNDLE_INFO_FILE), `${JSON.stringify({ incomplete: true })}\n`);
  const appDir = join(o.stageDir, APP_DIR_NAME);

  const linkedCopies = new Map<string, string>();
  const nodeTally: Tally = { files: 0, bytes: 0, linkedCopies };
  copyOne(process.execPath, join(o.stageDir, "node"), nodeTally);
  chmodSync(join(o.stageDir, "node"), 0o755);

  const appTally: Tally = { files: 0, bytes: 0, linkedCopies };
  const { files, untracked } = appFiles();
  const skipped: string[] = [];
  for (const f of files) {
    const src = join(PACKAGE_ROOT, f);
    // An --out inside the package and outside .gitignore would otherwise bundle the last bundle.
    if (src.startsWith(o.stageDir + sep) || src.startsWith(o.archivePath)) continue;
    const tooBig = lstatSync(src).isFile() && statSync(src).size > MAX_APP_FILE_BYTES;
    if (tooBig || SKIPPED_APP_EXTENSIONS.has(f.slice(f.lastIndexOf(".")).toLowerCase())) {
      skipped.push(f);
      continue;
    }
    copyOne(src, join(appDir, f), appTally);
  }
  if (!existsSync(join(appDir, "package.json"))) throw new BundleError(`package.json of ${PACKAGE_ROOT} is not known to git`);

  const depTally: Tally = { files: 0, bytes: 0, linkedCopies };
  const deps = productionDependencies();
  for (const dep of deps) copyDependency(join(PACKAGE_ROOT, dep.path), join(appDir, dep.path), depTally);

  for (const [name, text] of Object.entries(LAUNCHERS)) {
    writeFileSync(join(o.stageDir, name), text, { mode: 0o755 });
  }
  const pkg = readPackageJson(PACKAGE_ROOT);
  const info = {
    name: pkg.name,
    version: pkg.version,
    revision: gitRevision(),
    builtAt: new Date().toISOString(),
    platform: "linux-x64",
    node: process.version,
    glibcAtLeast: nodeGlibc(),
    // "name" for a hoisted package, "parent > name" for one nested under another.
    dependencies: Object.fromEntries(deps.map((d) => [d.path.split(sep).join("/").replace(/^node_modules\//, "").split("/node_modules/").join(" > "), d.version])),
  };
  writeFileSync(join(o.stageDir, BUNDLE_INFO_FILE), `${JSON.stringify(info, null, 2)}\n`);

  const stageFiles = nodeTally.files + appTally.files + depTally.files + Object.keys(LAUNCHERS).length + 1;
  const stageBytes = nodeTally.bytes + appTally.bytes + depTally.bytes;
  log(`kernelfarm agent bundle: node ${process.version} (needs glibc >= ${info.glibcAtLeast}), linux-x64, revision ${info.revision}`);
  log(`  node binary   ${MiB(nodeTally.bytes).padStart(10)}`);
  log(`  kernelfarm    ${MiB(appTally.bytes).padStart(10)}  ${appTally.files} files (${untracked} not yet in git)` +
    (skipped.length > 0 ? `; left out: ${skipped.join(", ")}` : ""));
  log(`  dependencies  ${MiB(depTally.bytes).padStart(10)}  ${depTally.files} files, ${deps.length} packages`);
  log(`  stage         ${MiB(stageBytes).padStart(10)}  ${stageFiles} files in ${o.stageDir} (${seconds(t0)})`);
  if (!o.compress) return { stageDir: o.stageDir, stageBytes, stageFiles };

  const t1 = performance.now();
  const partial = `${o.archivePath}.partial`;
  rmSync(partial, { force: true });
  const tar = spawnSync("tar", ["-cJf", partial, "--owner=0", "--group=0", "--numeric-owner", "-C", dirname(o.stageDir), BUNDLE_DIR_NAME], {
    env: { ...process.env, XZ_OPT: `-T0 -${o.level}` },
    stdio: ["ignore", "inherit", "inherit"],
  });
  if (tar.error || tar.status !== 0) {
    rmSync(partial, { force: true });
    throw new BundleError(`tar -cJf (xz) failed: ${tar.error?.message ?? `exit code ${tar.status}`}; it needs GNU tar and xz`);
  }
  const archiveBytes = statSync(partial).size;
  if (archiveBytes > MAX_ARCHIVE_BYTES) {
    rmSync(partial, { force: true });
    throw new BundleError(`the archive would be ${MiB(archiveBytes)}, over the ${MiB(MAX_ARCHIVE_BYTES)} limit (about twice the usual size: something large got in): ` +
      "see which packages grew in BUNDLE.json of the stage, or prune more in deploy/agent-bundle/build.ts");
  }
  renameSync(partial, o.archivePath);
  log(`  archive       ${MiB(archiveBytes).padStart(10)}  ${o.archivePath} (xz -${o.level}, ${seconds(t1)}; limit ${MiB(MAX_ARCHIVE_BYTES)})`);
  return { stageDir: o.stageDir, stageBytes, stageFiles, archivePath: o.archivePath, archiveBytes };
}

function main(argv: string[]): void {
  const { values } = parseArgs({
    args: argv,
    options: {
      out: { type: "string" },
      "no-compress": { type: "boolean" },
      level: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(`usage: npm run bundle:agent -- [--out FILE.tar.xz] [--no-compress] [--level N]

  --out FILE     the archive (default ${relative(process.cwd(), DEFAULT_ARCHIVE)}); the stage is ${BUNDLE_DIR_NAME}/ in its folder
  --no-compress  stage only
  --level N      xz preset 0-9 (default ${DEFAULT_XZ_LEVEL})`);
    return;
  }
  buildBundle({
    archivePath: values.out,
    compress: !values["no-compress"],
    level: values.level === undefined ? undefined : Number(values.level),
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    const known = err instanceof BundleError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
    console.error(`bundle:agent: ${known ? (err as Error).message : ((err as Error).stack ?? String(err))}`);
    process.exitCode = 1;
  }
}
