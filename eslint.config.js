// ESLint (flat config) with typescript-eslint: `npm run lint` runs it with --max-warnings 0, and .ci/run
// runs that before the suite. The TypeScript tree is linted with type information (the project's
// tsconfig.json), so the promise rules see which calls return promises.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

export default defineConfig(
  {
    // Generated or built output, and dependencies. (In python/, only the .ts helpers of the SDK's
    // cross-checks are files ESLint reads: they are linted like the rest.)
    ignores: ["protos/gen/**", "dist/**", "**/dist/**", "agent-bundle-out/**", "node_modules/**", "bench/out/**", "python/build/**"],
  },
  {
    linterOptions: { reportUnusedDisableDirectives: "error" },
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // A promise nobody awaits loses its rejection (an unhandled rejection ends the process);
      // `void p` says "fire and forget" and is accepted only where the rejection is handled or impossible.
      // node:test's describe/it/test return a promise that only ever fulfils (a failure is reported, not thrown).
      "@typescript-eslint/no-floating-promises": [
        "error",
        { allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["describe", "it", "test", "suite"] }] },
      ],
      // An async function where a void callback is expected (an event listener, a timer) drops its rejection.
      "@typescript-eslint/no-misused-promises": "error",
      // `import type` for what is only a type: the import is erased, so no module loads for a type.
      // Mixed imports keep the codebase's `import { a, type B }`.
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      // The codebase's habit: a leading underscore names what is left unused on purpose, and
      // `const { a: _, ...rest } = o` drops a key.
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_", ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Plain JavaScript (this file, bin/, the healthcheck, test fixtures): no type information.
    files: ["**/*.js", "**/*.mjs", "**/*.cjs"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      globals: {
        process: "readonly",
        console: "readonly",
        require: "readonly",
        module: "readonly",
        URL: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        fetch: "readonly",
      },
    },
  },
);
