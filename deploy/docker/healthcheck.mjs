/**
 * The images' HEALTHCHECK: GET $KFARM_HEALTH_URL (or the URL given as the
 * first argument) and exit 0 on a 2xx answer, 1 on anything else. It runs on
 * the bundle's node, so the images need no curl or wget.
 *
 * The URL is the container's own HTTP port on loopback: the tracker's
 * --metrics-port or the agent's --metrics-port, path /healthz.
 */
import { get as httpGet } from "node:http";
import { get as httpsGet } from "node:https";

/** Below HEALTHCHECK --timeout, so a hung server is reported here rather than by a killed probe. */
const TIMEOUT_MS = 2500;

const target = process.argv[2] ?? process.env.KFARM_HEALTH_URL;
if (!target) {
  console.error("healthcheck: no URL (set KFARM_HEALTH_URL)");
  process.exit(1);
}
const url = new URL(target);
// The probe reaches its own container over loopback: the certificate names the host's
// public name, not 127.0.0.1, and the check is about liveness, not the server's identity.
const get = url.protocol === "https:" ? (u, cb) => httpsGet(u, { rejectUnauthorized: false }, cb) : httpGet;
const req = get(url, (res) => {
  res.resume();
  const ok = res.statusCode >= 200 && res.statusCode < 300;
  if (!ok) console.error(`healthcheck: ${url.href} answered ${res.statusCode}`);
  process.exit(ok ? 0 : 1);
});
req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
req.on("error", (err) => {
  console.error(`healthcheck: ${url.href}: ${err.message}`);
  process.exit(1);
});
