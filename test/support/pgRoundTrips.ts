import { Effect, type Scope } from "effect"
import { createRequire } from "node:module"

/**
 * Counts the round trips the PostgreSQL driver makes (each `query` of a pg Client is one: the
 * driver sends a statement and waits for its answer before the next), by the statement's first
 * words, while the scope is open. Counts every client of the process: use it around one store's
 * work at a time.
 */
export interface RoundTrips {
  readonly total: () => number
  /** `BEGIN`, `COMMIT`, `SAVEPOINT`, `WITH`, `SELECT`, `UPDATE`, … → how many. */
  readonly byKind: () => ReadonlyMap<string, number>
  readonly reset: () => void
}

type Query = (this: unknown, ...args: Array<unknown>) => unknown

// The driver @effect/sql-pg loads (its ESM entry wraps this very CommonJS module); it ships no types.
const pg = createRequire(import.meta.url)("pg") as { readonly Client: { readonly prototype: { query: Query } } }

const kindOf = (args: ReadonlyArray<unknown>): string => {
  const first = args[0]
  const text = typeof first === "string" ? first : (first as { readonly text?: unknown } | null)?.text
  return typeof text === "string" ? (text.trim().split(/\s+/)[0] ?? "").toUpperCase() : "?"
}

export const countRoundTrips: Effect.Effect<RoundTrips, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => {
    const proto = pg.Client.prototype
    const original = proto.query
    const counts = new Map<string, number>()
    proto.query = function(this: unknown, ...args: Array<unknown>) {
      const kind = kindOf(args)
      counts.set(kind, (counts.get(kind) ?? 0) + 1)
      return original.apply(this, args)
    }
    return {
      original,
      proto,
      trips: {
        total: () => [...counts.values()].reduce((n, c) => n + c, 0),
        byKind: () => new Map(counts),
        reset: () => counts.clear()
      } satisfies RoundTrips
    }
  }),
  ({ original, proto }) => Effect.sync(() => { proto.query = original })
).pipe(Effect.map((installed) => installed.trips))
