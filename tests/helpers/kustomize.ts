/**
 * A small kustomize for tests: enough to render deploy/kubernetes, and it
 * refuses the rest. No npm package renders kustomizations and kubectl is not
 * installed where tests run, so an overlay is applied here: its `resources`
 * (files, and folders with a kustomization of their own), then, in
 * kustomize's order, `patches` (strategic-merge patch files), `namespace`,
 * `labels` and `images`. A field, patch form or directive it does not know
 * fails the render instead of being skipped; validating what comes out is the
 * schema package's business, not this file's.
 *
 * Strategic merge, as the API server's for the fields we patch: mappings
 * merge key by key (null deletes one); a list merges item by item on its
 * merge key (containers, initContainers, volumes, env by `name`; volumeMounts
 * by `mountPath`; container ports by `containerPort`, a Service's by `port`);
 * any other list is replaced whole.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Mapping = { [key: string]: Json };

/** Every document of a YAML file, read as kubectl reads it: YAML 1.1 (`0440` is octal, an unquoted `off` is false). */
export function readYamlDocuments(path: string): unknown[] {
  return parseAllDocuments(readFileSync(path, "utf8"), { version: "1.1" })
    .map((doc, i) => {
      if (doc.errors.length > 0) throw new Error(`${path}, document ${i + 1}: ${doc.errors[0]!.message}`);
      return doc.toJS() as unknown;
    })
    .filter((d) => d !== null);
}

const KUSTOMIZATION_FIELDS = new Set(["apiVersion", "kind", "resources", "namespace", "images", "labels", "patches"]);
const CLUSTER_SCOPED = new Set([
  "Namespace",
  "ClusterRole",
  "ClusterRoleBinding",
  "PersistentVolume",
  "StorageClass",
  "PriorityClass",
  "CustomResourceDefinition",
]);

interface Kustomization {
  resources?: string[];
  namespace?: string;
  images?: Array<{ name: string; newName?: string; newTag?: string }>;
  labels?: Array<{ pairs: Record<string, string>; includeSelectors?: boolean; includeTemplates?: boolean }>;
  patches?: Array<{ path: string }>;
}

/** A folder's kustomization.yaml, checked against what this renderer knows. */
export function readKustomization(dir: string): Kustomization {
  const path = join(dir, "kustomization.yaml");
  const [doc, ...more] = readYamlDocuments(path);
  if (more.length > 0 || typeof doc !== "object" || doc === null) throw new Error(`${path}: one mapping expected`);
  const k = doc as Record<string, unknown>;
  if (k.apiVersion !== "kustomize.config.k8s.io/v1beta1" || k.kind !== "Kustomization")
    throw new Error(`${path}: not a kustomize.config.k8s.io/v1beta1 Kustomization`);
  for (const field of Object.keys(k))
    if (!KUSTOMIZATION_FIELDS.has(field)) throw new Error(`${path}: "${field}" is not rendered by tests/helpers/kustomize.ts`);
  for (const p of (k.patches ?? []) as Array<Record<string, unknown>>) {
    if (Object.keys(p).join() !== "path")
      throw new Error(`${path}: only patches given by path (strategic merge files) are rendered here, got ${JSON.stringify(p)}`);
  }
  for (const l of (k.labels ?? []) as Array<Record<string, unknown>>) {
    if (l.includeSelectors) throw new Error(`${path}: labels with includeSelectors are not rendered here`);
  }
  return k as Kustomization;
}

/** The files a kustomization names (resources that are files, patches), as absolute paths; folders are rendered on their own. */
export function namedFiles(dir: string): string[] {
  const k = readKustomization(dir);
  return [...(k.resources ?? []), ...(k.patches ?? []).map((p) => p.path)].map((p) => resolve(dir, p));
}

/** The objects `kubectl kustomize DIR` would print (in no particular order). */
export function render(dir: string): K8sObject[] {
  const k = readKustomization(dir);
  let objects: K8sObject[] = [];
  for (const r of k.resources ?? []) {
    const path = resolve(dir, r);
    if (!existsSync(path)) throw new Error(`${join(dir, "kustomization.yaml")}: resource ${r} does not exist`);
    objects.push(...(statSync(path).isDirectory() ? render(path) : readYamlDocuments(path).map((d) => asObject(d, path))));
  }
  for (const { path } of k.patches ?? []) {
    for (const patch of readYamlDocuments(resolve(dir, path)).map((d) => asObject(d, path))) {
      const i = objects.findIndex((o) => o.kind === patch.kind && group(o.apiVersion) === group(patch.apiVersion) && o.metadata.name === patch.metadata.name);
      if (i < 0) throw new Error(`${path}: no ${patch.kind} ${patch.metadata.name} to patch`);
      objects[i] = merge(objects[i] as unknown as Json, patch as unknown as Json, "") as unknown as K8sObject;
    }
  }
  if (k.namespace !== undefined) objects = objects.map((o) => withNamespace(o, k.namespace!));
  for (const l of k.labels ?? []) objects = objects.map((o) => withLabels(o, l.pairs, l.includeTemplates ?? false));
  for (const image of k.images ?? []) objects = objects.map((o) => withImage(o, image));
  return objects;
}

function asObject(doc: unknown, path: string): K8sObject {
  const o = doc as Partial<K8sObject> | null;
  if (!o || typeof o.apiVersion !== "string" || typeof o.kind !== "string" || typeof o.metadata?.name !== "string") {
    throw new Error(`${path}: every document must be an object with apiVersion, kind and metadata.name`);
  }
  return o as K8sObject;
}

function group(apiVersion: string): string {
  return apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.lastIndexOf("/")) : "";
}

function isMapping(v: Json | undefined): v is Mapping {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The merge key of a list field, or undefined for lists replaced whole. */
function mergeKey(field: string, items: Json[]): string | undefined {
  if (["containers", "initContainers", "volumes", "env"].includes(field)) return "name";
  if (field === "volumeMounts") return "mountPath";
  if (field === "ports") return items.every((p) => isMapping(p) && "containerPort" in p) ? "containerPort" : "port";
  return undefined;
}

function merge(target: Json, patch: Json, at: string): Json {
  if (!isMapping(target) || !isMapping(patch)) return patch;
  const out: Mapping = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$")) throw new Error(`${at}/${key}: strategic-merge directives are not rendered here`);
    if (value === null) {
      delete out[key];
    } else if (Array.isArray(value) && Array.isArray(out[key])) {
      out[key] = mergeList(out[key] as Json[], value, key, `${at}/${key}`);
    } else {
      out[key] = key in out ? merge(out[key]!, value, `${at}/${key}`) : value;
    }
  }
  return out;
}

function mergeList(target: Json[], patch: Json[], field: string, at: string): Json[] {
  const key = mergeKey(field, [...target, ...patch]);
  if (!key) return patch;
  const out = [...target];
  for (const item of patch) {
    const i = isMapping(item) ? out.findIndex((t) => isMapping(t) && t[key] === item[key]) : -1;
    if (i < 0) out.push(item);
    else out[i] = merge(out[i]!, item, `${at}[${key}=${String((item as Mapping)[key])}]`);
  }
  return out;
}

function withNamespace(o: K8sObject, namespace: string): K8sObject {
  // kustomize renames Namespace objects too: the base's namespace becomes the overlay's.
  if (o.kind === "Namespace") return { ...o, metadata: { ...o.metadata, name: namespace } };
  return CLUSTER_SCOPED.has(o.kind) ? o : { ...o, metadata: { ...o.metadata, namespace } };
}

/** The pod template of a workload, if it has one. */
function podTemplate(o: K8sObject): { metadata?: { labels?: Record<string, string> }; spec: Record<string, unknown> } | undefined {
  const spec = o.spec as { template?: { metadata?: { labels?: Record<string, string> }; spec: Record<string, unknown> } } | undefined;
  return spec?.template?.spec ? spec.template : undefined;
}

function withLabels(o: K8sObject, pairs: Record<string, string>, includeTemplates: boolean): K8sObject {
  const out = structuredClone(o);
  out.metadata.labels = { ...out.metadata.labels, ...pairs };
  const template = includeTemplates ? podTemplate(out) : undefined;
  if (template) template.metadata = { ...template.metadata, labels: { ...template.metadata?.labels, ...pairs } };
  return out;
}

/** "registry:5000/a/b:tag" → ["registry:5000/a/b", ":tag"]; a digest stays with its name's suffix. */
function splitImage(image: string): [string, string] {
  const at = image.indexOf("@");
  const end = at >= 0 ? at : image.length;
  const colon = image.lastIndexOf(":", end);
  const cut = colon > image.lastIndexOf("/", end) ? colon : end;
  return [image.slice(0, cut), image.slice(cut)];
}

function withImage(o: K8sObject, image: { name: string; newName?: string; newTag?: string }): K8sObject {
  const out = structuredClone(o);
  const spec = podTemplate(out)?.spec;
  for (const field of ["containers", "initContainers"]) {
    for (const c of (spec?.[field] ?? []) as Array<{ image?: string }>) {
      if (!c.image) continue;
      const [name, suffix] = splitImage(c.image);
      if (name !== image.name) continue;
      c.image = `${image.newName ?? name}${image.newTag !== undefined ? `:${image.newTag}` : suffix}`;
    }
  }
  return out;
}
