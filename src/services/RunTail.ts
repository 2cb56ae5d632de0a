import { Context, Effect, Layer, type Scope } from "effect"
import type { RunId } from "../domain/Ids.js"
import { realClock } from "./RealClock.js"

/**
 * How a run's followers in other processes hear that it committed more chunks, so they read the
 * Store at once instead of on a timer: a cluster's runners share it over PostgreSQL LISTEN/NOTIFY
 * (store/PgTail.ts). A notice carries no chunk — the Store has them all, in order — so a lost one
 * costs a little latency, never a chunk: followers still look again after a bound.
 */
export class RunTail extends Context.Tag("baton/RunTail")<RunTail, {
  /** Tells every process that `runId` has new chunks in the Store (fire-and-forget, coalesced). */
  readonly committed: (runId: RunId) => Effect.Effect<void>
  /**
   * Listens for `runId`'s notices from now on (for the scope); the answer waits for the next one,
   * or `ms` at most. Subscribe before reading the Store, so a commit between the two is not missed.
   */
  readonly watch: (runId: RunId) => Effect.Effect<(ms: number) => Effect.Effect<void>, never, Scope.Scope>
}>() {}

/** No notices: followers in other processes look again every `ms` (one process, or tests). */
export const layerPolling: Layer.Layer<RunTail> = Layer.succeed(RunTail, RunTail.of({
  committed: () => Effect.void,
  watch: () => Effect.succeed((ms) => Effect.withClock(Effect.sleep(ms), realClock))
}))
