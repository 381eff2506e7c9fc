/**
 * Builds a module bundle with the TypeScript compilers, for the Python tests
 * (python/tests/modules.py): until they build with the Python SDK's own
 * compilers, this is how they get CPU and VTA modules.
 *
 *   node --import tsx python/tests/ts/build_module.ts cpu SOURCE.c FUNCTIONS.json OUT_DIR
 *   node --import tsx python/tests/ts/build_module.ts vta TUTORIAL OUT_DIR
 *
 * Writes the bundle to OUT_DIR/<its name> and prints one JSON line: path,
 * name, digest, and the function table.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compileCpu, compileVta, VTA_TUTORIALS, type CompiledModule } from "../../../host-sdk/index.ts";

const [kind, ...args] = process.argv.slice(2);
let module: CompiledModule;
let out: string;
if (kind === "cpu" && args.length === 3) {
  const [source, functions, dir] = args as [string, string, string];
  module = await compileCpu(readFileSync(source, "utf8"), { functions: JSON.parse(readFileSync(functions, "utf8")) as Record<string, string[]> });
  out = dir;
} else if (kind === "vta" && args.length === 2 && args[0]! in VTA_TUTORIALS) {
  module = compileVta(VTA_TUTORIALS[args[0] as keyof typeof VTA_TUTORIALS]);
  out = args[1]!;
} else {
  console.error(`usage: build_module.ts cpu SOURCE.c FUNCTIONS.json OUT_DIR | vta {${Object.keys(VTA_TUTORIALS).join(",")}} OUT_DIR`);
  process.exit(2);
}
const path = join(out, module.name);
writeFileSync(path, module.bytes);
console.log(JSON.stringify({ path, name: module.name, digest: module.digest, functions: module.functions }));
