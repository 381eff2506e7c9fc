#!/usr/bin/env node
// The `kfarm` command: TypeScript sources run through tsx, no build step.
import { register } from "tsx/esm/api";

register();
await import("../cli/main.ts");
