/**
 * Builds one of the VTA tutorials' modules with the TypeScript VTA compiler,
 * for the Python tests (python/tests/modules.py): the Python SDK compiles CPU
 * and CUDA modules itself but has no VTA compiler.
 *
 *   node --import tsx python/tests/ts/build_module.ts TUTORIAL OUT_DIR
 *
 * Writes the bundle to OUT_DIR/<its name> and prints one JSON line: its path.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { compileVta, VTA_TUTORIALS } from "../../../host-sdk/index.ts";

const [tutorial, out] = process.argv.slice(2);
if (tutorial === undefined || out === undefined || !(tutorial in VTA_TUTORIALS)) {
  console.error(`usage: build_module.ts {${Object.keys(VTA_TUTORIALS).join(",")}} OUT_DIR`);
  process.exit(2);
}
const module = compileVta(VTA_TUTORIALS[tutorial as keyof typeof VTA_TUTORIALS]);
const path = join(out, module.name);
writeFileSync(path, module.bytes);
console.log(JSON.stringify({ path }));
