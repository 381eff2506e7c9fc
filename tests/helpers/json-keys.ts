/** The keys of a JSON object's top level, in order, duplicates kept (JSON.parse keeps only the last). */
export function topLevelKeys(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '"') {
      let j = i + 1;
      while (line[j] !== '"') j += line[j] === "\\" ? 2 : 1;
      if (depth === 1 && line[j + 1] === ":") keys.push(JSON.parse(line.slice(i, j + 1)) as string);
      i = j;
    } else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") depth--;
  }
  return keys;
}

/** The keys a JSON line names more than once at its top level. */
export function repeatedKeys(line: string): string[] {
  const keys = topLevelKeys(line);
  return keys.filter((k, i) => keys.indexOf(k) !== i);
}
