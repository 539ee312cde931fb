// Path matching for the HTTP edge: templates like `/v1/indexes/{index_id}/documents/{doc_id}`
// matched segment by segment on the raw (still percent-encoded) path, so an encoded slash stays
// inside its segment and can never change which route is chosen. Static segments win over
// parameters, with backtracking: `GET /v1/indexes/stream` is the stream route while
// `DELETE /v1/indexes/stream` still reaches `DELETE /v1/indexes/{index_id}` (an index may be
// named "stream"). Fully static paths are answered from one Map lookup, the typeahead fast path.

export type MatchResult<R> =
  | { kind: 'found'; route: R; params: string[] }
  /** the path exists but not for this method */
  | { kind: 'method'; allowed: string[] }
  | { kind: 'none' };

class Node<R> {
  readonly statics = new Map<string, Node<R>>();
  param: Node<R> | null = null;
  readonly handlers = new Map<string, R>();
}

const NO_PARAMS: string[] = [];

export class RouteTable<R> {
  private readonly root = new Node<R>();
  private readonly staticRoutes = new Map<string, Map<string, R>>();
  private readonly entries: { method: string; template: string; route: R }[] = [];

  /** Registers `route` for `method` on `template`; a duplicate registration is a programming error. */
  add(method: string, template: string, route: R): void {
    const segments = splitTemplate(template);
    let node = this.root;
    let isStatic = true;
    for (const seg of segments) {
      if (seg.startsWith('{') && seg.endsWith('}')) {
        isStatic = false;
        node.param ??= new Node<R>();
        node = node.param;
      } else {
        let next = node.statics.get(seg);
        if (!next) node.statics.set(seg, (next = new Node<R>()));
        node = next;
      }
    }
    if (node.handlers.has(method)) throw new Error(`route ${method} ${template} registered twice`);
    node.handlers.set(method, route);
    if (isStatic) {
      const key = '/' + segments.join('/');
      let byMethod = this.staticRoutes.get(key);
      if (!byMethod) this.staticRoutes.set(key, (byMethod = new Map()));
      byMethod.set(method, route);
    }
    this.entries.push({ method, template, route });
  }

  /** Every registration, in order. */
  list(): readonly { method: string; template: string; route: R }[] {
    return this.entries;
  }

  /** `path` is the raw path without query string. A single trailing slash is ignored. */
  match(method: string, path: string): MatchResult<R> {
    if (path.length > 1 && path.charCodeAt(path.length - 1) === 47 /* / */) path = path.slice(0, -1);
    const fast = this.staticRoutes.get(path)?.get(method);
    if (fast !== undefined) return { kind: 'found', route: fast, params: NO_PARAMS };
    if (path.charCodeAt(0) !== 47) return { kind: 'none' };
    const segments = path.slice(1).split('/');
    const params: string[] = [];
    const found = this.find(this.root, segments, 0, method, params);
    if (found !== undefined) return { kind: 'found', route: found, params };
    const allowed = new Set<string>();
    this.collect(this.root, segments, 0, allowed);
    return allowed.size > 0 ? { kind: 'method', allowed: [...allowed].sort() } : { kind: 'none' };
  }

  private find(node: Node<R>, segments: string[], i: number, method: string, params: string[]): R | undefined {
    if (i === segments.length) return node.handlers.get(method);
    const seg = segments[i]!;
    const next = node.statics.get(seg);
    if (next) {
      const r = this.find(next, segments, i + 1, method, params);
      if (r !== undefined) return r;
    }
    // An empty segment (`//`) never binds a parameter.
    if (node.param && seg.length > 0) {
      params.push(seg);
      const r = this.find(node.param, segments, i + 1, method, params);
      if (r !== undefined) return r;
      params.pop();
    }
    return undefined;
  }

  private collect(node: Node<R>, segments: string[], i: number, out: Set<string>): void {
    if (i === segments.length) {
      for (const m of node.handlers.keys()) out.add(m);
      return;
    }
    const seg = segments[i]!;
    const next = node.statics.get(seg);
    if (next) this.collect(next, segments, i + 1, out);
    if (node.param && seg.length > 0) this.collect(node.param, segments, i + 1, out);
  }
}

/** Template segments without the leading slash. */
export function splitTemplate(template: string): string[] {
  if (!template.startsWith('/')) throw new Error(`route template must start with '/': ${template}`);
  return template === '/' ? [] : template.slice(1).split('/');
}

/** Parameter names of a template, in order. */
export function templateParams(template: string): string[] {
  return splitTemplate(template)
    .filter((s) => s.startsWith('{') && s.endsWith('}'))
    .map((s) => s.slice(1, -1));
}
