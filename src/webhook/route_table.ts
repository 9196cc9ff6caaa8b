/**
 * The routes the listener serves: static routes of `config.yaml` plus the subscriptions file,
 * re-read on a POST when the file changed. A change is noticed by modification time, size and
 * inode together (an atomic rewrite always has a new inode, so a same-second edit is not
 * missed). A corrupt file keeps the previous routes, and the error is reported once per change.
 *
 * @module
 */
import { type Filter, parseFilters } from "./filters.ts";
import type { Route } from "./routes.ts";
import { dynamicRoutes, readSubscriptions } from "./subscriptions.ts";

/** A route ready to serve: with its filter parsed. */
export interface ServedRoute extends Route {
  filter?: Filter;
}

/** Options of {@linkcode RouteTable}. */
export interface RouteTableOptions {
  /** `<home>/webhook_subscriptions.json`. */
  file: string;
  /** Static routes of config.yaml (they win over subscriptions of the same name). */
  staticRoutes: readonly Route[];
  /** Where problems are reported. */
  report: (problem: string) => void;
}

/**
 * Route lookup with reload on change.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RouteTable } from "./route_table.ts";
 * const table = new RouteTable({ file: "/nonexistent/subs.json", staticRoutes: [], report: () => {} });
 * assert.equal(table.get("github"), undefined);
 * ```
 */
export class RouteTable {
  readonly #options: RouteTableOptions;
  readonly #static = new Map<string, ServedRoute>();
  #dynamic = new Map<string, ServedRoute>();
  #stamp = "";

  constructor(options: RouteTableOptions) {
    this.#options = options;
    for (const route of options.staticRoutes) {
      const served = this.#serve(route);
      if (served) this.#static.set(route.name, served);
    }
    this.refresh();
  }

  /** Re-reads the subscriptions file when it changed since the last read. */
  refresh(): void {
    const stamp = fileStamp(this.#options.file);
    if (stamp === this.#stamp) return;
    this.#stamp = stamp;
    let records;
    try {
      records = readSubscriptions(this.#options.file);
    } catch (error) {
      this.#options.report(
        `${error instanceof Error ? error.message : error}; the previous routes stay in use`,
      );
      return;
    }
    const { routes, problems } = dynamicRoutes(records, this.#options.file);
    for (const problem of problems) this.#options.report(problem);
    const next = new Map<string, ServedRoute>();
    for (const route of routes) {
      if (this.#static.has(route.name)) {
        this.#options.report(
          `subscription '${route.name}' has the name of a static route in config.yaml; the static route is used`,
        );
        continue;
      }
      const served = this.#serve(route);
      if (served) next.set(route.name, served);
    }
    this.#dynamic = next;
  }

  /** The route called `name`, static first. */
  get(name: string): ServedRoute | undefined {
    return this.#static.get(name) ?? this.#dynamic.get(name);
  }

  /** Every route served now. */
  all(): ServedRoute[] {
    return [...this.#static.values(), ...this.#dynamic.values()];
  }

  #serve(route: Route): ServedRoute | undefined {
    if (route.filters === undefined) return { ...route };
    const where = route.source === "static"
      ? `platforms.webhook.extra.routes.${route.name}.filters`
      : `${this.#options.file}: ${route.name}.filters`;
    const { filter, problems } = parseFilters(route.filters, where);
    if (problems.length > 0) {
      for (const problem of problems) this.#options.report(problem);
      this.#options.report(`route '${route.name}' is not served until its filters are fixed`);
      return undefined;
    }
    return { ...route, filter };
  }
}

function fileStamp(file: string): string {
  try {
    const info = Deno.statSync(file);
    return `${info.mtime?.getTime()}:${info.size}:${info.ino}:${info.ctime?.getTime()}`;
  } catch {
    return "missing";
  }
}
