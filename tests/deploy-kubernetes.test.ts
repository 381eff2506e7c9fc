/**
 * deploy/kubernetes, offline: every manifest and what the base and the
 * example overlay render to are checked against the Kubernetes API's schemas
 * (kubernetes-models) and the Prometheus Operator's (ServiceMonitor,
 * PodMonitor), and the objects are checked to fit together (names, ports,
 * volumes, Secrets, the kfarm flags they pass). No cluster is involved: the
 * schemas catch wrong types, missing fields and bad values, not a misspelt
 * optional field (the schemas allow unknown fields, as the API server's do
 * unless asked to be strict), nor what only a running cluster shows.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { before, describe, it } from "node:test";
import * as kubernetes from "kubernetes-models";
import * as prometheusOperator from "@kubernetes-models/prometheus-operator";
import { namedFiles, readYamlDocuments, render, type K8sObject } from "./helpers/kustomize.ts";
import { runCli } from "./helpers/processes.ts";

const ROOT = fileURLToPath(new URL("../deploy/kubernetes/", import.meta.url));
const BASE = join(ROOT, "base");
const OVERLAY = join(ROOT, "overlays/example");

interface Model {
  new (data: unknown): { validate(): void };
  apiVersion: string;
  kind: string;
}

/** Every model class the schema packages hold, by "apiVersion kind": GROUP.VERSION.Kind (core: v1.Kind). */
function schemaModels(): Map<string, Model> {
  const out = new Map<string, Model>();
  const walk = (exports: Record<string, unknown>, depth: number) => {
    for (const m of Object.values(exports)) {
      const model = m as Partial<Model>;
      if (typeof m === "function" && typeof model.apiVersion === "string" && typeof model.kind === "string")
        out.set(`${model.apiVersion} ${model.kind}`, m as Model);
      else if (typeof m === "object" && m !== null && depth < 2) walk(m as Record<string, unknown>, depth + 1);
    }
  };
  walk(kubernetes, 0);
  walk(prometheusOperator, 0);
  return out;
}

const MODELS = schemaModels();

/** Throws, naming the object and the schema's complaint, unless `o` is valid. */
function validate(o: K8sObject, where: string): void {
  const model = MODELS.get(`${o.apiVersion} ${o.kind}`);
  assert.ok(model, `${where}: no schema for ${o.apiVersion} ${o.kind}`);
  try {
    new model(o).validate();
  } catch (err) {
    assert.fail(`${where}: ${o.kind} ${o.metadata.name} is not valid: ${(err as Error).message}`);
  }
}

function yamlFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    return e.isDirectory() ? yamlFilesUnder(path) : /\.ya?ml$/.test(e.name) ? [path] : [];
  });
}

const kustomizationDirs = () =>
  yamlFilesUnder(ROOT)
    .filter((f) => basename(f) === "kustomization.yaml")
    .map((f) => dirname(f));
const examples = () => yamlFilesUnder(ROOT).filter((f) => f.endsWith(".example.yaml"));

interface Container {
  name: string;
  image?: string;
  args?: string[];
  command?: string[];
  env?: Array<{ name: string; valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: { name: string; key: string } } }>;
  ports?: Array<{ name?: string; containerPort: number }>;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
  readinessProbe?: { httpGet?: { port: number | string; path: string } };
  livenessProbe?: { httpGet?: { port: number | string; path: string } };
}

interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Array<{
    name: string;
    secret?: { secretName: string; items?: Array<{ key: string }> };
    configMap?: { name: string };
    persistentVolumeClaim?: { claimName: string };
  }>;
}

function podOf(o: K8sObject): { labels: Record<string, string>; spec: PodSpec } | undefined {
  const t = (o.spec as { template?: { metadata?: { labels?: Record<string, string> }; spec: PodSpec } } | undefined)?.template;
  return t ? { labels: t.metadata?.labels ?? {}, spec: t.spec } : undefined;
}

const find = (objects: K8sObject[], kind: string, name: string): K8sObject => {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(o, `no ${kind} ${name}`);
  return o;
};

const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

/** The flags each kfarm command takes, from its --help. */
const cliFlags = new Map<string, string>();

/**
 * What a deployment needs beyond each object's schema: every container has
 * requests and limits, every $(VAR) it uses is defined, every volume it
 * mounts and every port its probes name exist, every Secret key it reads is
 * one the example Secrets have, every ConfigMap and claim is rendered,
 * every Service and monitor selects pods, and every kfarm flag is real.
 */
function checkFitsTogether(objects: K8sObject[], where: string): void {
  const secrets = new Map(
    examples()
      .flatMap((f) => readYamlDocuments(f) as K8sObject[])
      .filter((s) => s.kind === "Secret")
      .map((s) => [s.metadata.name, Object.keys({ ...(s.stringData as object), ...(s.data as object) })]),
  );
  const hasSecretKey = (name: string, key: string) =>
    assert.ok(secrets.get(name)?.includes(key), `${where}: Secret ${name} has no key ${key} in secrets.example.yaml`);
  const pods = objects.flatMap((o) => (podOf(o) ? [{ o, pod: podOf(o)! }] : []));
  assert.ok(pods.length > 0, `${where}: no workloads`);
  for (const { o, pod } of pods) {
    const at = `${where}: ${o.kind} ${o.metadata.name}`;
    const volumes = new Map((pod.spec.volumes ?? []).map((v) => [v.name, v]));
    for (const v of volumes.values()) {
      if (v.secret) for (const item of v.secret.items ?? []) hasSecretKey(v.secret.secretName, item.key);
      if (v.secret && !v.secret.items) assert.ok(secrets.has(v.secret.secretName), `${at}: no example of Secret ${v.secret.secretName}`);
      if (v.configMap) find(objects, "ConfigMap", v.configMap.name);
      if (v.persistentVolumeClaim) find(objects, "PersistentVolumeClaim", v.persistentVolumeClaim.claimName);
    }
    for (const c of [...pod.spec.containers, ...(pod.spec.initContainers ?? [])]) {
      const cat = `${at}, container ${c.name}`;
      for (const side of ["requests", "limits"] as const) {
        for (const r of ["cpu", "memory"]) assert.ok(c.resources?.[side]?.[r] !== undefined, `${cat}: no ${side}.${r}`);
      }
      const env = new Set((c.env ?? []).map((e) => e.name));
      for (const arg of [...(c.args ?? []), ...(c.command ?? [])]) {
        for (const [, name] of arg.matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g))
          assert.ok(env.has(name!), `${cat}: ${arg} uses $(${name}), which its env does not define`);
      }
      for (const e of c.env ?? []) if (e.valueFrom?.secretKeyRef) hasSecretKey(e.valueFrom.secretKeyRef.name, e.valueFrom.secretKeyRef.key);
      for (const m of c.volumeMounts ?? []) assert.ok(volumes.has(m.name), `${cat}: mounts volume ${m.name}, which the pod does not have`);
      for (const probe of [c.readinessProbe, c.livenessProbe]) {
        const port = probe?.httpGet?.port;
        if (typeof port === "string")
          assert.ok(
            c.ports?.some((p) => p.name === port),
            `${cat}: a probe names port ${port}, which the container does not have`,
          );
      }
      const [command, ...flags] = c.args ?? [];
      if (command === "tracker" || command === "agent") {
        for (const flag of flags) {
          const name = /^--[a-z-]+/.exec(flag)?.[0];
          assert.ok(name && new RegExp(`(^|\\s)${name}[\\s,=<]`, "m").test(cliFlags.get(command)!), `${cat}: \`kfarm ${command}\` has no flag ${flag}`);
        }
      }
    }
  }
  for (const s of objects.filter((o) => o.kind === "Service" || o.kind === "PodDisruptionBudget")) {
    const selector =
      s.kind === "Service"
        ? (s.spec as { selector: Record<string, string> }).selector
        : (s.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
    assert.ok(
      pods.some(({ pod }) => matches(selector, pod.labels)),
      `${where}: ${s.kind} ${s.metadata.name} selects no pod`,
    );
  }
  const tracker = find(objects, "Service", "kfarm-tracker");
  assert.ok(
    matches(
      (find(objects, "ServiceMonitor", "kfarm-tracker").spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels,
      tracker.metadata.labels ?? {},
    ),
    `${where}: the ServiceMonitor does not select the tracker's Service`,
  );
  const podMonitor = (
    find(objects, "PodMonitor", "kfarm-agents").spec as {
      selector: { matchLabels: Record<string, string>; matchExpressions: Array<{ key: string; values: string[] }> };
    }
  ).selector;
  for (const [kind, name] of [
    ["Deployment", "kfarm-agent-sim"],
    ["DaemonSet", "kfarm-agent-cuda"],
  ] as const) {
    const labels = podOf(find(objects, kind, name))!.labels;
    assert.ok(
      matches(podMonitor.matchLabels, labels) && podMonitor.matchExpressions.every((e) => e.values.includes(labels[e.key]!)),
      `${where}: the PodMonitor does not select ${name}`,
    );
  }
}

describe("deploy/kubernetes", () => {
  before(async () => {
    for (const command of ["tracker", "agent"]) {
      const help = await runCli([command, "--help"]);
      assert.equal(help.code, 0, help.stderr);
      cliFlags.set(command, help.stdout);
    }
  });

  it("every YAML file is a kustomization, a file one of them names, or an example; every named file exists", () => {
    const named = new Set<string>();
    for (const dir of kustomizationDirs()) {
      for (const file of namedFiles(dir)) {
        assert.ok(existsSync(file), `${relative(ROOT, dir)}/kustomization.yaml names ${relative(ROOT, file)}, which does not exist`);
        if (statSync(file).isDirectory())
          assert.ok(existsSync(join(file, "kustomization.yaml")), `${relative(ROOT, file)} is named as a resource but has no kustomization.yaml`);
        else named.add(file);
      }
    }
    for (const file of yamlFilesUnder(ROOT)) {
      assert.ok(
        basename(file) === "kustomization.yaml" || named.has(file) || file.endsWith(".example.yaml"),
        `${relative(ROOT, file)} is in no kustomization (name it, or call it *.example.yaml)`,
      );
    }
  });

  it("every object of the base's files and of the examples is valid against its schema", () => {
    const files = [...namedFiles(BASE), ...examples()];
    for (const file of files) {
      const docs = readYamlDocuments(file) as K8sObject[];
      assert.ok(docs.length > 0, `${relative(ROOT, file)} holds no object`);
      for (const o of docs) validate(o, relative(ROOT, file));
    }
  });

  it("the base renders to valid objects that fit together", () => {
    const objects = render(BASE);
    for (const o of objects) validate(o, "base");
    checkFitsTogether(objects, "base");
    assert.ok(objects.every((o) => o.kind === "Namespace" || o.metadata.namespace === "kfarm"));
    const tracker = find(objects, "Deployment", "kfarm-tracker").spec as { replicas: number; strategy: { type: string } };
    assert.deepEqual([tracker.replicas, tracker.strategy.type], [1, "Recreate"], "one tracker, never two at once");
  });

  it("the example overlay renders on the base to valid objects, with its changes", () => {
    const objects = render(OVERLAY);
    for (const o of objects) validate(o, "overlays/example");
    checkFitsTogether(objects, "overlays/example");
    assert.equal(find(objects, "Namespace", "kfarm-lab").kind, "Namespace");
    assert.ok(objects.every((o) => o.kind === "Namespace" || o.metadata.namespace === "kfarm-lab"));
    assert.ok(objects.every((o) => o.metadata.labels?.team === "kernels"));
    for (const { spec, labels } of objects.flatMap((o) => (podOf(o) ? [podOf(o)!] : []))) {
      assert.equal(labels.team, "kernels");
      for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) assert.match(c.image!, /^registry\.example\.com\//);
    }
    assert.equal((find(objects, "Deployment", "kfarm-agent-sim").spec as { replicas: number }).replicas, 4);
    const service = find(objects, "Service", "kfarm-tracker");
    assert.equal((service.spec as { type: string }).type, "LoadBalancer");
    assert.equal(service.metadata.annotations?.["external-dns.alpha.kubernetes.io/hostname"], "tracker.farm.example");
    assert.deepEqual(
      (service.spec as { ports: Array<{ port: number }> }).ports.map((p) => p.port),
      [9190, 9193, 9191],
      "the patch keeps the base's ports",
    );
    const cuda = podOf(find(objects, "DaemonSet", "kfarm-agent-cuda"))!.spec as PodSpec & { nodeSelector: Record<string, string> };
    assert.equal(cuda.containers[0]!.resources!.limits!["nvidia.com/gpu"], 8);
    assert.deepEqual(Object.keys(cuda.nodeSelector).sort(), ["nvidia.com/gpu.present", "nvidia.com/gpu.product"]);
    assert.ok(cuda.containers[0]!.args!.includes("--board=cuda:all:key=h100,node=$(NODE_NAME)"), "a patch of the resources leaves the args alone");
    for (const kind of ["ServiceMonitor", "PodMonitor"])
      assert.ok(
        objects.some((o) => o.kind === kind && o.metadata.labels?.release === "kube-prometheus-stack"),
        kind,
      );
  });
});
