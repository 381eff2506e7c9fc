/**
 * The images' HEALTHCHECK: GET $KFARM_HEALTH_URL (or the URL given as the
 * first argument) and exit 0 on a 2xx answer, 1 on anything else. It runs on
 * the bundle's node, so the images need no curl or wget.
 *
 * The URL is the container's own HTTP port on loopback: the tracker's
 * --metrics-port or the agent's --metrics-port, path /healthz. Without a
 * scheme (the images' default, `127.0.0.1:9191/healthz`) it asks over TLS
 * and, when the port turns out to speak plain HTTP, over HTTP: the same
 * image serves TLS or not depending on its arguments (--tls-cert on the
 * tracker, --metrics-tls-cert on an agent).
 */
import { get as httpGet } from "node:http";
import { get as httpsGet } from "node:https";

/** Below HEALTHCHECK --timeout, so a hung server is reported here rather than by a killed probe. */
const TIMEOUT_MS = 2500;

/** What a TLS client gets from a server that answers in plain HTTP. */
const PLAIN_HTTP_ERRORS = new Set(["ERR_SSL_WRONG_VERSION_NUMBER", "ERR_SSL_PACKET_LENGTH_TOO_LONG", "EPROTO"]);

/** The status code of GET url, or the error. */
function status(url) {
  return new Promise((resolve, reject) => {
    // The probe reaches its own container over loopback: the certificate names the host's
    // public name, not 127.0.0.1, and the check is about liveness, not the server's identity.
    const req = url.protocol === "https:" ? httpsGet(url, { rejectUnauthorized: false }) : httpGet(url);
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
  });
}

async function check(target) {
  const schemeless = !/^[a-z][a-z0-9+.-]*:\/\//i.test(target);
  const url = new URL(schemeless ? `https://${target}` : target);
  try {
    return { url, code: await status(url) };
  } catch (err) {
    if (!schemeless || !PLAIN_HTTP_ERRORS.has(err.code)) throw Object.assign(err, { url });
    const plain = new URL(`http://${target}`);
    return {
      url: plain,
      code: await status(plain).catch((e) => {
        throw Object.assign(e, { url: plain });
      }),
    };
  }
}

const target = process.argv[2] ?? process.env.KFARM_HEALTH_URL;
if (!target) {
  console.error("healthcheck: no URL (set KFARM_HEALTH_URL)");
  process.exit(1);
}
try {
  const { url, code } = await check(target);
  if (code < 200 || code >= 300) {
    console.error(`healthcheck: ${url.href} answered ${code}`);
    process.exit(1);
  }
} catch (err) {
  console.error(`healthcheck: ${err.url?.href ?? target}: ${err.message}`);
  process.exit(1);
}
