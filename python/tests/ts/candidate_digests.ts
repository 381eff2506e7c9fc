/**
 * The TypeScript candidate digest of candidates described on stdin (a JSON
 * list, python/tests/ts/candidates.ts), for python/tests/test_candidate_digest.py:
 * the Python SDK must compute the same, byte for byte.
 *
 *   node --import tsx python/tests/ts/candidate_digests.ts < candidates.json
 *
 * Prints a JSON list: per candidate, { digest, definition } — the digest, and
 * the canonical JSON of its definition (to show where two digests part).
 */
import { readFileSync } from "node:fs";
import { candidateDigest, canonicalJson } from "../../../host-sdk/measure/candidate-digest.ts";
import { argOf, type CandidateDescription } from "./candidates.ts";

const described = JSON.parse(readFileSync(0, "utf8")) as CandidateDescription[];
const out = described.map((d) => ({
  digest: candidateDigest({
    ...(d.moduleDigest !== undefined ? { moduleDigest: d.moduleDigest } : {}),
    ...(d.definition !== undefined ? { definition: d.definition } : {}),
    function: d.function,
    args: d.args.map(argOf),
    ...(d.atol !== undefined ? { atol: d.atol } : {}),
    ...(d.rtol !== undefined ? { rtol: d.rtol } : {}),
    ...(d.launch ? { launch: d.launch } : {}),
    ...(d.timeEvaluator ? { timeEvaluator: d.timeEvaluator } : {}),
    ...(d.timeoutMs !== undefined ? { timeoutMs: d.timeoutMs } : {}),
  }),
  definition: d.definition === undefined ? null : canonicalJson(d.definition),
}));
console.log(JSON.stringify(out));
