/**
 * `npm run bundle:agent`: one archive that runs a kernelfarm agent (and the
 * GPU tests and benchmarks) on a Linux host or board with glibc and nothing
 * else — no Node.js, no npm, no network.
 *
 * For linux-x64 (the default) the archive holds one folder, `kfarm-agent/`:
 *
 *   node          the Node binary running this script (process.execPath), copied
 *   kfarm         launchers (POSIX sh) that use only ./node:
 *   test-gpu        `kfarm …`, `npm run test:gpu`, `npm run bench -- …`
 *   bench
 *   BUNDLE.json   what was bundled (versions, commit, the glibc node was built against)
 *   app/          the package: its git files (tracked, and untracked ones not
 *                 ignored) and its production dependency tree for linux-x64
 *
 * For linux-arm64 and linux-armv7l (`--arch`: VTA boards such as the Pynq-Z1
 * or the Ultra96) node is Debian's for that CPU, with every library it loads,
 * glibc and the dynamic loader included (debian.ts):
 *
 *   node          a launcher (sh): lib/LOADER --library-path lib lib/node …
 *   kfarm         as for x64
 *   lib/          node, its libraries, the loader, the builtins libnode reads (nodejs/),
 *                 and an esbuild launcher for KFARM_EMULATOR
 *   BUNDLE.json   as for x64, plus the Debian packages and what was left out
 *   app/          as for x64, with the platform packages of that CPU (platform-packages.ts)
 *
 * The package sits in `app/` because it has a `bench/` folder of its own and
 * the `bench` launcher must not collide with it.
 *
 *   node --import tsx deploy/agent-bundle/build.ts [--arch x64|arm64|armv7l] [--out FILE.tar.xz] [--no-compress] [--level N]
 *                                                  [--mirror URL] [--allow-unsigned-index]
 *
 * The stage is `kfarm-agent/` in the archive's folder (default dist/).
 */
import { execFileSync, spawnSync } from "node:child_process";
import {
  accessSync,
  chmodSync,
  constants,
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { delimiter, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import {
  BUILTINS_DIR,
  BUILTINS_FD,
  DEBIAN_KEYRING,
  DEBIAN_SUITE,
  DEBIAN_TOOLS,
  DEFAULT_DEBIAN_MIRROR,
  stageDebianNode,
  type DebianArch,
  type DebianNode,
} from "./debian.ts";
import { EM_AARCH64, EM_ARM, EM_X86_64, isMusl, readElf } from "./elf.ts";
import { BundleError, DownloadError } from "./errors.ts";
import { fetchPackage } from "./platform-packages.ts";

export { BundleError, DownloadError };

/** The package root: this file is deploy/agent-bundle/build.ts. */
const PACKAGE_ROOT = fileURLToPath(new URL("../../", import.meta.url));

export const BUNDLE_DIR_NAME = "kfarm-agent";
/** Where the package goes inside the bundle folder. */
export const APP_DIR_NAME = "app";
/** Marks a folder this script may delete and rebuild: written first as a placeholder, filled in last. */
export const BUNDLE_INFO_FILE = "BUNDLE.json";
/** Where downloads for ARM bundles are kept between builds (git ignores dist/). */
export const DOWNLOAD_CACHE = { debian: join(PACKAGE_ROOT, "dist", "debs"), npm: join(PACKAGE_ROOT, "dist", "npm") } as const;

export type BundleArch = "x64" | "arm64" | "armv7l";

export interface BundleTarget {
  readonly arch: BundleArch;
  /** npm's and Node's name of the CPU (package.json `cpu`, process.arch). */
  readonly cpu: "x64" | "arm64" | "arm";
  /** ELF e_machine of its native files. */
  readonly machine: number;
  /** Debian's node for this CPU; absent: the running node. */
  readonly debian?: Omit<DebianArch, "machine">;
  /** Packages of the dependency tree left out, and why (BUNDLE.json says so too). */
  readonly leftOut: Readonly<Record<string, string>>;
}

const NO_MSGPACKR_EXTRACT = "optional native string decoder of msgpackr, which decodes in JavaScript without it; its ARM prebuilds are not fetched";

export const TARGETS: Readonly<Record<BundleArch, BundleTarget>> = {
  x64: { arch: "x64", cpu: "x64", machine: EM_X86_64, leftOut: {} },
  arm64: {
    arch: "arm64",
    cpu: "arm64",
    machine: EM_AARCH64,
    debian: { arch: "arm64", triplet: "aarch64-linux-gnu" },
    leftOut: { "msgpackr-extract": NO_MSGPACKR_EXTRACT },
  },
  armv7l: {
    arch: "armv7l",
    cpu: "arm",
    machine: EM_ARM,
    debian: { arch: "armhf", triplet: "arm-linux-gnueabihf" },
    leftOut: { "msgpackr-extract": NO_MSGPACKR_EXTRACT },
  },
};

export function defaultArchive(arch: BundleArch): string {
  return join(PACKAGE_ROOT, "dist", `${BUNDLE_DIR_NAME}-linux-${arch}.tar.xz`);
}
/** xz -6, measured on a 2-vCPU VM: 27.8 MiB in 38 s (-3: 31.1 MiB in 27 s; -9: 27.5 MiB in 90 s and 3x the memory). */
export const DEFAULT_XZ_LEVEL = 6;
/** About twice the archive's usual size: a bundle beyond it carries something it should not. */
export const MAX_ARCHIVE_BYTES = 60 * 1024 * 1024;
/** A git file bigger than this is a fixture or a capture nobody runs from the bundle: left out, and said so. */
const MAX_APP_FILE_BYTES = 8 * 1024 * 1024;
/** Git files of these kinds are documentation pictures: left out. */
const SKIPPED_APP_EXTENSIONS = new Set([".png", ".jpg", ".jpeg", ".gif", ".webp", ".ico", ".pdf"]);

/** Files of dependencies that nothing loads at run time: docs, source maps, type declarations, native sources. */
const PRUNED_DEP_FILE =
  /(\.(md|markdown|map|d\.ts|d\.mts|d\.cts|tsbuildinfo|c|cc|cpp|cxx|h|hh|hpp|inc|gyp|gypi)|^CMakeLists\.txt|^\.(npmignore|eslintrc.*|prettierrc.*|editorconfig|travis\.yml|nycrc.*))$/i;
/** Folders directly under a dependency's root that nothing loads at run time (kept if package.json points into one). */
const PRUNED_DEP_DIRS = new Set(["test", "tests", "__tests__", "example", "examples", "bench", "benchmark", "benchmarks", "doc", "docs", ".github"]);

export interface BundleOptions {
  /** The CPU it is for; default x64. */
  arch?: BundleArch;
  /** The archive to write; the stage is `kfarm-agent/` in its folder. */
  archivePath?: string;
  /** false: stage only (tests). */
  compress?: boolean;
  /** xz preset, 0–9. */
  level?: number;
  /** The Debian mirror ARM bundles take node from. */
  mirror?: string;
  /** Take the mirror's package index when Debian's signed release file names another (a mirror out of sync); the .debs are still checked against it. */
  allowUnsignedIndex?: boolean;
}

export interface ResolvedBundleOptions {
  readonly target: BundleTarget;
  readonly archivePath: string;
  readonly stageDir: string;
  readonly compress: boolean;
  readonly level: number;
  readonly mirror: string;
  readonly allowUnsignedIndex: boolean;
}

export function resolveBundleOptions(opts: BundleOptions = {}): ResolvedBundleOptions {
  const arch = opts.arch ?? "x64";
  if (!Object.hasOwn(TARGETS, arch)) throw new BundleError(`--arch must be one of ${Object.keys(TARGETS).join(", ")}, got ${arch}`);
  const archivePath = resolve(opts.archivePath ?? defaultArchive(arch));
  if (!archivePath.endsWith(".tar.xz")) throw new BundleError(`--out must name a .tar.xz file, got ${archivePath}`);
  const level = opts.level ?? DEFAULT_XZ_LEVEL;
  if (!Number.isInteger(level) || level < 0 || level > 9) throw new BundleError(`--level must be an xz preset 0..9, got ${level}`);
  const mirror = (opts.mirror ?? DEFAULT_DEBIAN_MIRROR).replace(/\/+$/, "");
  if (!/^https?:\/\/[^/]/.test(mirror))
    throw new BundleError(`--mirror must be an http(s) URL of a Debian mirror (like ${DEFAULT_DEBIAN_MIRROR}), got ${mirror}`);
  return {
    target: TARGETS[arch],
    archivePath,
    stageDir: join(dirname(archivePath), BUNDLE_DIR_NAME),
    compress: opts.compress ?? true,
    level,
    mirror,
    allowUnsignedIndex: opts.allowUnsignedIndex ?? false,
  };
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

function onPath(tool: string): boolean {
  return (process.env.PATH ?? "")
    .split(delimiter)
    .filter(Boolean)
    .some((dir) => {
      try {
        accessSync(join(dir, tool), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
}

/**
 * Why this machine cannot build the bundle for `arch`, or undefined if it can.
 * An x64 bundle carries the running node binary, so that binary must be a
 * self-contained linux-x64 glibc build. An ARM bundle is made of Debian's
 * packages, with Debian's tools, and fetches the ARM platform packages with npm.
 */
export function bundleRefusal(arch: BundleArch = "x64"): string | undefined {
  if (TARGETS[arch].debian) {
    if (process.platform !== "linux") return `the ${arch} agent bundle is made with Debian's tools; this is ${process.platform}: build it on Linux`;
    const missing = Object.entries({ ...DEBIAN_TOOLS, tar: "tar", npm: "npm" }).filter(([tool]) => !onPath(tool));
    if (missing.length > 0) {
      return `building the ${arch} agent bundle needs ${missing.map(([t]) => t).join(", ")}, not on the PATH (Debian: apt-get install ${missing.map(([, p]) => p).join(" ")})`;
    }
    if (!existsSync(DEBIAN_KEYRING))
      return `building the ${arch} agent bundle checks Debian's signatures with ${DEBIAN_KEYRING}, which is missing (apt-get install debian-archive-keyring)`;
    return undefined;
  }
  const here = `${process.platform}-${process.arch}`;
  if (here !== "linux-x64") {
    return `the agent bundle is for linux-x64 and carries the running node binary; this is ${here}: build it on a linux-x64 machine`;
  }
  if (!nodeGlibc()) return `the running node (${process.execPath}) is not a glibc build (musl?): it would not run on a glibc host`;
  const vars = (process.config.variables ?? {}) as unknown as Record<string, unknown>;
  const shared = Object.keys(vars).filter((k) => k.startsWith("node_shared") && vars[k] === true);
  if (shared.length > 0) {
    return (
      `the running node (${process.execPath}) loads shared libraries a GPU host may lack (${shared.join(", ")}): ` +
      "build with an official nodejs.org or NodeSource build"
    );
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
      throw new BundleError(
        `the bundle takes the package's files from git, and \`git ${args.join(" ")}\` failed in ${PACKAGE_ROOT}: ${(err as Error).message}`,
      );
    }
  };
  const tracked = git("ls-files", "-z", "--cached").split("\0").filter(Boolean);
  // Work in progress is rarely committed when a bundle is built for a test run: take it too.
  const untracked = git("ls-files", "-z", "--others", "--exclude-standard").split("\0").filter(Boolean);
  // node_modules is the dependency walk's: a symlinked one (a git worktree's) is no folder to `node_modules/` in .gitignore,
  // and copied as a link it would have the dependency copy write through it into the real one.
  const files = [...new Set([...tracked, ...untracked])]
    .filter((f) => f !== "node_modules" && !f.startsWith("node_modules/") && existsSync(join(PACKAGE_ROOT, f)))
    .sort();
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
  /** Not installed here (npm installs this machine's platform packages only): fetched, and checked against this lockfile integrity. */
  readonly integrity?: string;
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

function fits(pkg: Pick<PackageJson, "os" | "cpu" | "libc">, target: BundleTarget): boolean {
  return allows(pkg.os, "linux") && allows(pkg.cpu, target.cpu) && allows(pkg.libc, "glibc");
}

/** Node's lookup of `name` from `fromDir`, stopping at the package root (the bundle holds nothing above it). */
function locate(name: string, fromDir: string): string | undefined {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (resolve(dir) === resolve(PACKAGE_ROOT) || dirname(dir) === dir) return undefined;
  }
}

type Lockfile = Record<string, Pick<PackageJson, "version" | "os" | "cpu" | "libc"> & { integrity?: string }>;

function readLockfile(): Lockfile {
  try {
    return (JSON.parse(readFileSync(join(PACKAGE_ROOT, "package-lock.json"), "utf8")) as { packages: Lockfile }).packages;
  } catch (err) {
    throw new BundleError(
      `a bundle for another CPU takes its platform packages' versions from package-lock.json, which cannot be read: ${(err as Error).message}`,
    );
  }
}

/** An optional package npm skipped here, where the lockfile places it, if it fits `target`: one to fetch. */
function lockedFor(lock: Lockfile, name: string, fromDir: string, target: BundleTarget): DependencyPackage | undefined {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const path = relative(PACKAGE_ROOT, join(dir, "node_modules", name));
    const entry = lock[path.split(sep).join("/")];
    if (entry) {
      if (!fits(entry, target)) return undefined;
      if (!entry.version || !entry.integrity)
        throw new BundleError(`package-lock.json has no version or integrity for ${path} to fetch it by: refresh the lockfile with npm install`);
      return { name, version: entry.version, path, integrity: entry.integrity };
    }
    if (resolve(dir) === resolve(PACKAGE_ROOT) || dirname(dir) === dir) return undefined;
  }
}

/**
 * The dependency tree that `npm ci --omit=dev` installs for `target` (linux,
 * glibc), found in the local node_modules: dependencies, optional ones that
 * are installed and fit the target, peers. Type-only `@types/*` and the
 * target's `leftOut` are left out. For another CPU than this one, the optional
 * packages npm skipped here that fit the target come with an integrity to fetch
 * them by (platform packages, which have no dependencies of their own).
 */
export function productionDependencies(target: BundleTarget = TARGETS.x64): DependencyPackage[] {
  const lock = target.cpu !== process.arch ? readLockfile() : undefined;
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
      if (name.startsWith("@types/") || Object.hasOwn(target.leftOut, name)) continue;
      const dir = locate(name, from);
      if (!dir) {
        const fetched = optional && lock ? lockedFor(lock, name, from, target) : undefined;
        if (fetched) found.set(fetched.path, fetched);
        if (optional) continue;
        throw new BundleError(`${name}, a dependency of ${pkg.name ?? "the package"}, is not installed under ${PACKAGE_ROOT}: run \`npm ci\` first`);
      }
      const path = relative(PACKAGE_ROOT, dir);
      if (found.has(path)) continue;
      const dep = readPackageJson(dir);
      if (!fits(dep, target)) continue;
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

/** Whether `file` is a native program or addon the bundle's node cannot run or load: another machine's, or a musl build. */
function foreignNative(file: string, target: BundleTarget): boolean {
  if (!lstatSync(file).isFile()) return false;
  const elf = readElf(file);
  return !!elf && (elf.machine !== target.machine || isMusl(elf));
}

/**
 * Copies a dependency's folder without its nested node_modules (those are
 * packages of their own), what nothing loads, and native files of other
 * machines or for musl (`leftOut` gets their paths in the stage's app/).
 */
function copyDependency(srcRoot: string, dstRoot: string, tally: Tally, target: BundleTarget, leftOut: string[], appDir: string): void {
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
        if (foreignNative(join(srcRoot, relPath), target)) leftOut.push(relative(appDir, join(dstRoot, relPath)).split(sep).join("/"));
        else copyOne(join(srcRoot, relPath), join(dstRoot, relPath), tally);
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

const KFARM_LAUNCHER = `#!/bin/sh
# kfarm from the kernelfarm agent bundle; runs on the node next to this file only.
${FIND_DIR}
exec "$DIR/node" "$DIR/${APP_DIR_NAME}/bin/kfarm.mjs" "$@"
`;

/** An x64 bundle's launchers, beside the node binary. */
const X64_LAUNCHERS: Record<string, string> = {
  kfarm: KFARM_LAUNCHER,
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

/**
 * An ARM bundle's launchers: `node` starts Debian's node through the bundled
 * dynamic loader; `kfarm` runs on it. `esbuild` is the path of the platform
 * package's binary in app/.
 */
function debianLaunchers(loader: string, esbuild: string): Record<string, string> {
  return {
    node: `#!/bin/sh
# node from the kernelfarm agent bundle: Debian's node, started by the bundled dynamic loader on the
# bundled libraries (glibc included), so the system's own libc and loader play no part.
${FIND_DIR}
# process.execPath is the loader here, which runs no script by itself: the agent starts session workers with this launcher.
KFARM_NODE=$DIR/node
export KFARM_NODE
# libnode reads a few builtins (cjs-module-lexer, undici, acorn, minimatch) from files as it starts; the build
# pointed their paths into /proc/self/fd/${BUILTINS_FD}/, which this makes lib/${BUILTINS_DIR}/.
exec ${BUILTINS_FD}<"$DIR/lib/${BUILTINS_DIR}" || exit 1
# KFARM_EMULATOR (an absolute path to qemu-aarch64 or qemu-arm) runs the bundle on a machine with another CPU;
# esbuild, an ARM program too, then runs under it as well.
if [ -n "\${KFARM_EMULATOR:-}" ]; then
  ESBUILD_BINARY_PATH=$DIR/lib/esbuild
  export ESBUILD_BINARY_PATH
fi
exec \${KFARM_EMULATOR:-} "$DIR/lib/${loader}" --library-path "$DIR/lib" "$DIR/lib/node" "$@"
`,
    kfarm: KFARM_LAUNCHER,
    "lib/esbuild": `#!/bin/sh
# esbuild for esbuild's JS API under KFARM_EMULATOR (../node points ESBUILD_BINARY_PATH here only then).
exec $KFARM_EMULATOR "\${0%/*}/../${APP_DIR_NAME}/${esbuild}" "$@"
`,
  };
}

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
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: PACKAGE_ROOT, stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .trim();
    const dirty = execFileSync("git", ["status", "--porcelain"], { cwd: PACKAGE_ROOT, stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .trim();
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

export async function buildBundle(opts: BundleOptions = {}, log: (line: string) => void = console.log): Promise<BundleResult> {
  const o = resolveBundleOptions(opts);
  const { target } = o;
  const platform = `linux-${target.arch}`;
  const refusal = bundleRefusal(target.arch);
  if (refusal) throw new BundleError(refusal);
  const t0 = performance.now();
  clearStage(o.stageDir);
  mkdirSync(o.stageDir, { recursive: true });
  writeFileSync(join(o.stageDir, BUNDLE_INFO_FILE), `${JSON.stringify({ incomplete: true })}\n`);
  const appDir = join(o.stageDir, APP_DIR_NAME);

  const linkedCopies = new Map<string, string>();
  const nodeTally: Tally = { files: 0, bytes: 0, linkedCopies };
  let debian: DebianNode | undefined;
  if (target.debian) {
    debian = await stageDebianNode({ ...target.debian, machine: target.machine }, join(o.stageDir, "lib"), {
      cacheDir: DOWNLOAD_CACHE.debian,
      mirror: o.mirror,
      allowUnsignedIndex: o.allowUnsignedIndex,
      log,
    });
    nodeTally.files += debian.files;
    nodeTally.bytes += debian.bytes;
  } else {
    copyOne(process.execPath, join(o.stageDir, "node"), nodeTally);
    chmodSync(join(o.stageDir, "node"), 0o755);
  }

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
  const deps = productionDependencies(target);
  const foreign: string[] = [];
  for (const dep of deps) {
    if (!dep.integrity) {
      copyDependency(join(PACKAGE_ROOT, dep.path), join(appDir, dep.path), depTally, target, foreign, appDir);
      continue;
    }
    const fetched = await fetchPackage(dep.name, dep.version, dep.integrity, DOWNLOAD_CACHE.npm);
    try {
      copyDependency(fetched, join(appDir, dep.path), depTally, target, foreign, appDir);
    } finally {
      rmSync(fetched, { recursive: true, force: true });
    }
  }

  let launchers = X64_LAUNCHERS;
  if (debian) {
    // tsx runs kernelfarm's TypeScript through esbuild: no bundle works without the target's binary.
    const esbuild = deps.find((d) => d.name === `@esbuild/linux-${target.cpu}`);
    if (!esbuild)
      throw new BundleError(`the dependency tree has no @esbuild/linux-${target.cpu}, which tsx needs on ${platform}: is esbuild still a dependency of tsx?`);
    launchers = debianLaunchers(debian.loader, `${esbuild.path.split(sep).join("/")}/bin/esbuild`);
  }
  for (const [name, text] of Object.entries(launchers)) {
    writeFileSync(join(o.stageDir, name), text, { mode: 0o755 });
  }
  const pkg = readPackageJson(PACKAGE_ROOT);
  const present = (name: string) => existsSync(join(PACKAGE_ROOT, "node_modules", name));
  const leftOut = {
    ...Object.fromEntries(Object.entries(target.leftOut).filter(([name]) => present(name))),
    ...Object.fromEntries(foreign.map((f) => [`app/${f}`, `a native file for another machine or for musl: ${platform}'s node cannot load it`])),
  };
  const info = {
    name: pkg.name,
    version: pkg.version,
    revision: gitRevision(),
    builtAt: new Date().toISOString(),
    platform,
    node: debian?.nodeVersion ?? process.version,
    ...(debian
      ? {
          nodeFrom: `Debian ${DEBIAN_SUITE} nodejs ${debian.debianVersion} (${target.debian!.arch}), started by lib/${debian.loader}`,
          glibc: `${debian.glibc} (bundled)`,
          debianIndex: debian.signedIndex
            ? `signed: Debian's release file names it`
            : `unsigned: as ${new URL(o.mirror).host} served it (--allow-unsigned-index)`,
          debianPackages: debian.packages,
          libraries: debian.libraries,
          builtins: debian.builtins,
        }
      : { glibcAtLeast: nodeGlibc() }),
    // "name" for a hoisted package, "parent > name" for one nested under another.
    dependencies: Object.fromEntries(
      deps.map((d) => [
        d.path
          .split(sep)
          .join("/")
          .replace(/^node_modules\//, "")
          .split("/node_modules/")
          .join(" > "),
        d.version,
      ]),
    ),
    leftOut,
  };
  writeFileSync(join(o.stageDir, BUNDLE_INFO_FILE), `${JSON.stringify(info, null, 2)}\n`);

  const stageFiles = nodeTally.files + appTally.files + depTally.files + Object.keys(launchers).length + 1;
  const stageBytes = nodeTally.bytes + appTally.bytes + depTally.bytes;
  const fetchedDeps = deps.filter((d) => d.integrity);
  if (debian) {
    log(
      `kernelfarm agent bundle: node ${debian.nodeVersion} (Debian ${DEBIAN_SUITE} ${debian.debianVersion}, glibc ${debian.glibc} bundled), ${platform}, revision ${info.revision}`,
    );
    log(
      `  node + libs   ${MiB(nodeTally.bytes).padStart(10)}  ${nodeTally.files} files from ${Object.keys(debian.packages).length} Debian packages` +
        ` (${MiB(debian.downloadedBytes)} downloaded, cache ${relative(process.cwd(), DOWNLOAD_CACHE.debian) || "."})`,
    );
  } else {
    log(`kernelfarm agent bundle: node ${process.version} (needs glibc >= ${nodeGlibc()}), ${platform}, revision ${info.revision}`);
    log(`  node binary   ${MiB(nodeTally.bytes).padStart(10)}`);
  }
  log(
    `  kernelfarm    ${MiB(appTally.bytes).padStart(10)}  ${appTally.files} files (${untracked} not yet in git)` +
      (skipped.length > 0 ? `; left out: ${skipped.join(", ")}` : ""),
  );
  log(
    `  dependencies  ${MiB(depTally.bytes).padStart(10)}  ${depTally.files} files, ${deps.length} packages` +
      (fetchedDeps.length > 0 ? `; for ${target.cpu}: ${fetchedDeps.map((d) => d.name).join(", ")}` : "") +
      (Object.keys(leftOut).length > 0 ? `; left out: ${Object.keys(leftOut).join(", ")}` : ""),
  );
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
    throw new BundleError(
      `the archive would be ${MiB(archiveBytes)}, over the ${MiB(MAX_ARCHIVE_BYTES)} limit (about twice the usual size: something large got in): ` +
        "see which packages grew in BUNDLE.json of the stage, or prune more in deploy/agent-bundle/build.ts",
    );
  }
  renameSync(partial, o.archivePath);
  log(`  archive       ${MiB(archiveBytes).padStart(10)}  ${o.archivePath} (xz -${o.level}, ${seconds(t1)}; limit ${MiB(MAX_ARCHIVE_BYTES)})`);
  return { stageDir: o.stageDir, stageBytes, stageFiles, archivePath: o.archivePath, archiveBytes };
}

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      arch: { type: "string" },
      out: { type: "string" },
      "no-compress": { type: "boolean" },
      level: { type: "string" },
      mirror: { type: "string" },
      "allow-unsigned-index": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(`usage: npm run bundle:agent -- [--arch x64|arm64|armv7l] [--out FILE.tar.xz] [--no-compress] [--level N] [--mirror URL] [--allow-unsigned-index]

  --arch ARCH    the CPU of the hosts it runs on (default x64, which carries the node running this);
                 arm64 and armv7l carry Debian ${DEBIAN_SUITE}'s node with its libraries (docs/agent-bundle.md)
  --out FILE     the archive (default ${relative(process.cwd(), defaultArchive("x64")).replace("x64", "ARCH")}); the stage is ${BUNDLE_DIR_NAME}/ in its folder
  --no-compress  stage only
  --level N      xz preset 0-9 (default ${DEFAULT_XZ_LEVEL})
  --mirror URL   the Debian mirror for arm64 and armv7l (default ${DEFAULT_DEBIAN_MIRROR})
  --allow-unsigned-index
                 when the mirror serves a package index Debian's signed release file does not name
                 (a mirror out of sync), use it anyway; each .deb is still checked against it`);
    return;
  }
  await buildBundle({
    arch: values.arch as BundleArch | undefined,
    archivePath: values.out,
    compress: !values["no-compress"],
    level: values.level === undefined ? undefined : Number(values.level),
    mirror: values.mirror,
    allowUnsignedIndex: values["allow-unsigned-index"],
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    const known = err instanceof BundleError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
    console.error(`bundle:agent: ${known ? (err as Error).message : ((err as Error).stack ?? String(err))}`);
    process.exitCode = 1;
  });
}
