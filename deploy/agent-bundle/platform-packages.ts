/**
 * Packages of another CPU for a cross-built bundle. npm installs only this
 * machine's platform packages (`@esbuild/linux-x64`, `@koromix/koffi-linux-x64`),
 * so an ARM bundle's (`@esbuild/linux-arm64`, …) are fetched with `npm pack`
 * at the version package-lock.json names, and checked against its integrity.
 * Tarballs are cached (dist/npm/): a rebuild fetches nothing.
 */
import { execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { BundleError, DownloadError } from "./errors.ts";

const execFileAsync = promisify(execFile);
const PACK_TIMEOUT_MS = 5 * 60_000;

/** Whether `file` has the lockfile's integrity: `sha512-BASE64`, the first if it lists several. */
function hasIntegrity(file: string, integrity: string): boolean {
  // Base64 has no "-": the first one ends the algorithm's name.
  const [algorithm, digest] = integrity.trim().split(/\s+/)[0]!.split("-");
  if (!algorithm || !digest) throw new BundleError(`package-lock.json has an integrity string npm does not write: ${integrity}`);
  return createHash(algorithm).update(readFileSync(file)).digest("base64") === digest;
}

/**
 * The package `name@version` unpacked into a fresh folder (the caller removes
 * it): from the cache, else from the registry through `npm pack`.
 */
export async function fetchPackage(name: string, version: string, integrity: string, cacheDir: string): Promise<string> {
  const cached = join(cacheDir, `${name.replace("/", "+")}-${version}.tgz`);
  if (!existsSync(cached) || !hasIntegrity(cached, integrity)) {
    mkdirSync(cacheDir, { recursive: true });
    const into = mkdtempSync(join(cacheDir, ".pack-"));
    try {
      await execFileAsync("npm", ["pack", `${name}@${version}`, "--pack-destination", into, "--loglevel=error"], { timeout: PACK_TIMEOUT_MS });
      const [tgz, ...more] = readdirSync(into);
      if (!tgz || more.length > 0)
        throw new BundleError(`npm pack ${name}@${version} left ${readdirSync(into).join(", ") || "nothing"} in ${into}, not one tarball`);
      if (!hasIntegrity(join(into, tgz), integrity)) {
        throw new BundleError(
          `${name}@${version} from the registry does not match package-lock.json's integrity (${integrity}): check \`npm config get registry\``,
        );
      }
      renameSync(join(into, tgz), cached);
    } catch (err) {
      if (err instanceof BundleError) throw err;
      const e = err as NodeJS.ErrnoException & { stderr?: string };
      if (e.code === "ENOENT") throw new BundleError(`fetching ${name}@${version} for the bundle's CPU needs npm, which is not on the PATH`);
      const why = e.stderr?.trim().split("\n").slice(0, 2).join("; ") || e.message;
      throw new DownloadError(
        `could not fetch ${name}@${version} with \`npm pack\`: ${why}. ` +
          `Check that this machine reaches the registry (\`npm config get registry\`; a proxy goes in npm's https-proxy setting), or put the tarball at ${cached}`,
      );
    } finally {
      rmSync(into, { recursive: true, force: true });
    }
  }
  const dir = mkdtempSync(join(tmpdir(), "kfarm-package-"));
  // npm tarballs hold one folder (usually package/).
  execFileSync("tar", ["-xzf", cached, "-C", dir, "--strip-components=1", "--no-same-owner"]);
  return dir;
}
