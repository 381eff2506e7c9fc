/**
 * kernelfarm's version: what `kfarm --version`, the tracker's summary (and so
 * `kfarm status` and the live view) and an agent's registration say. Equal to
 * package.json's version (tests/cli.test.ts checks), kept here so the agent
 * bundle, which carries no package.json, knows it too.
 */
export const FARM_VERSION = "0.1.0";
