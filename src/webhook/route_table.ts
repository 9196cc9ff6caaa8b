/**
 * The routes the listener serves: static routes of `config.yaml` plus the subscriptions file,
 * re-read on a POST when the file changed. A change is noticed by modification time, size and
 * inode together (an atomic rewrite always has a new inode, so a same-second edit is not
 * missed). A corrupt file keeps the previous routes, and a record that became invalid keeps its
 * previous version; each error is reported once per change. A route served despite a flaw (an
 * invalid filter regex) is warned about once per load, never per request.
 *
 * @module
 */
import { dirname } from "node:path";
import { fileStamp } from "../home/files.ts";
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
  /** `<home>`: relative `in_file` paths of filters are read from it. Default: the file's folder. */
  home?: string;
  /** Static routes of config.yaml (they win over subscriptions of the same name). */
  staticRoutes: readonly Route[];
  /** Where problems are reported: what keeps a route, or the file, from being used. */
  report: (problem: string) => void;
  /**
   * Where warnings are reported: something wrong in a route that is still served (an invalid
   * filter regex, whose condition is always false). Once per load of the route: at start for a
   * static route, at each reload of the file for a subscription. Default: `report`.
   */
  warn?: (warning: string) => void;
  /**
   * Told, after a reload of the file (not the first read), which subscriptions it added and which
   * it removed, when it did either: a removal is otherwise seen only as 404s.
   */
  changed?: (change: { added: string[]; removed: string[]; served: number }) => void;
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
  readonly #home: string;
  readonly #static = new Map<string, ServedRoute>();
  #dynamic = new Map<string, ServedRoute>();
  #stamp = "";
  #loaded = false;

  constructor(options: RouteTableOptions) {
    this.#options = options;
    this.#home = options.home ?? dirname(options.file);
    for (const route of options.staticRoutes) {
      const { served, problems, warnings } = this.#serve(route);
      for (const problem of problems) options.report(problem);
      for (const warning of warnings) this.#warn(warning);
      if (served) this.#static.set(route.name, served);
      else options.report(`route '${route.name}' is not served until its filters are fixed`);
    }
    this.refresh();
  }

  /**
   * Re-reads the subscriptions file when it changed since the last read. A record that cannot be
   * used is reported (file, record, problem); its previous version, when there is one, stays in
   * use until it is fixed, and the other records load as usual.
   */
  refresh(): void {
    const stamp = fileStamp(this.#options.file);
    if (stamp === this.#stamp) return;
    this.#stamp = stamp;
    const { file, report } = this.#options;
    let records;
    try {
      records = readSubscriptions(file);
    } catch (error) {
      report(
        `${error instanceof Error ? error.message : error}; ${
          this.#dynamic.size > 0
            ? "the subscriptions read before stay in use until it is fixed"
            : "no subscription is served until it is fixed"
        }`,
      );
      return;
    }
    const next = new Map<string, ServedRoute>();
    for (const [name, record] of Object.entries(records)) {
      const { served, problems, warnings } = this.#load(name, record);
      if (problems.length > 0) {
        for (const problem of problems) report(problem);
        const previous = this.#dynamic.get(name);
        report(
          previous
            ? `${file}: subscription '${name}' is invalid; its previous version stays in use ` +
              "until the record is fixed"
            : `${file}: subscription '${name}' is invalid; it is not served until the record ` +
              "is fixed",
        );
        if (previous) next.set(name, previous);
        continue;
      }
      if (!served) continue;
      if (this.#static.has(served.name)) {
        report(
          `${file}: subscription '${served.name}' has the name of a static route in ` +
            "config.yaml; the static route is used. Fix: `agent webhook remove " +
            `${served.name}\` (it removes the subscription and keeps the static route), or ` +
            "rename the record",
        );
        continue;
      }
      for (const warning of warnings) this.#warn(warning);
      next.set(served.name, served);
    }
    const previous = this.#dynamic;
    this.#dynamic = next;
    if (!this.#loaded) {
      this.#loaded = true;
      return;
    }
    const added = [...next.keys()].filter((name) => !previous.has(name));
    const removed = [...previous.keys()].filter((name) => !next.has(name));
    if (added.length > 0 || removed.length > 0) {
      this.#options.changed?.({ added, removed, served: next.size });
    }
  }

  /** The route called `name`, static first. */
  get(name: string): ServedRoute | undefined {
    return this.#static.get(name) ?? this.#dynamic.get(name);
  }

  /** Every route served now. */
  all(): ServedRoute[] {
    return [...this.#static.values(), ...this.#dynamic.values()];
  }

  #warn(warning: string): void {
    (this.#options.warn ?? this.#options.report)(warning);
  }

  /** One record of the file as a served route, or the problems that keep it from being one. */
  #load(name: string, record: unknown): Served {
    const { routes, problems } = dynamicRoutes({ [name]: record }, this.#options.file);
    if (problems.length > 0) return { problems, warnings: [] };
    return routes.length === 0 ? { problems: [], warnings: [] } : this.#serve(routes[0]);
  }

  /** A route with its filter parsed (and its regexes compiled), or why it cannot be served. */
  #serve(route: Route): Served {
    if (route.filters === undefined) return { served: { ...route }, problems: [], warnings: [] };
    const where = route.source === "static"
      ? `platforms.webhook.extra.routes.${route.name}.filters`
      : `${this.#options.file}: ${route.name}.filters`;
    const { filter, problems, warnings } = parseFilters(route.filters, where, {
      baseDir: this.#home,
    });
    return problems.length > 0
      ? { problems, warnings }
      : { served: { ...route, filter }, problems, warnings };
  }
}

/** What loading one route gave. */
interface Served {
  served?: ServedRoute;
  problems: string[];
  warnings: string[];
}
