import { Effect, Option } from "effect"
import type { ConversationId, Otid } from "../../domain/Ids.js"
import type { RunKind } from "../../domain/Run.js"
import type { Store } from "../Store.js"
import { busyConflict, conversationNotFound, newRun } from "./Codec.js"
import { hotPath, type makeCommit } from "./SqlCommit.js"
import { plan } from "./SqlPlan.js"
import { toRuns } from "./SqlRows.js"
import type { SqlEngine } from "./SqlStore.js"

type CreateRunOptions = Parameters<Store["Type"]["createRun"]>[3]

/**
 * A run and its input, created together or not at all: the otid decides first (a repeated otid
 * answers its run), then a running run refuses a new one. On an engine with one-statement writes
 * (PostgreSQL) the common case is one statement; what it cannot decide from its own snapshot goes
 * to the general path, a transaction holding the conversation's row while it reads.
 */
export const makeCreateRun = (engine: SqlEngine, write: Pick<ReturnType<typeof makeCommit>, "prepare" | "within">) => {
  const { guard: run, q, retry, source, sql } = engine
  const { exec, transaction } = hotPath(engine)
  const runs = toRuns(source)
  const { prepare, within } = write
  return Effect.fn("Store.createRun")(function*(id: ConversationId, otid: Otid, kind: RunKind, options?: CreateRunOptions) {
    const created = yield* newRun(id, otid, kind, options?.owner)
    const now = created.createdAt
    const input = options?.input?.(created)
    const planned = engine.one === undefined
      ? undefined
      : input === undefined
      ? null
      : plan({ conversationId: id, ...input }, yield* prepare({ conversationId: id, ...input }))
    if (engine.one !== undefined && planned !== undefined) {
      const row = { id: created.id, conversation_id: id, otid, kind, owner: created.owner ?? null, created_at: now }
      // A unique index's refusal, or a running run seen in the statement's snapshot (it may have
      // finished while the statement waited for the conversation), is decided again below.
      const answer = yield* engine.one.createRun(row, planned ?? undefined).pipe(
        Effect.map(Option.some),
        Effect.catchIf(engine.uniqueRace ?? (() => false), () => Effect.succeed(Option.none())),
        retry,
        run
      )
      if (Option.isSome(answer)) {
        if (!answer.value.found) return yield* conversationNotFound(id)
        const found = yield* runs(answer.value.existing)
        const existing = found.find((r) => r.otid === otid)
        if (existing !== undefined) return { run: existing, created: false }
        if (found.length === 0) return { run: created, created: true }
      }
    }
    return yield* transaction(Effect.gen(function*() {
      // Holding the conversation's row (PostgreSQL; SQLite's transaction holds the whole file once
      // it writes), the checks below and the insert see every run another process started.
      const [conversation] = yield* exec(q.lockConversation(id))
      if (conversation === undefined) return yield* conversationNotFound(id)
      // One statement answers both checks. The otid decides first: a repeated otid returns its run,
      // running or not; only then does a running run refuse a new one.
      const found = yield* Effect.flatMap(exec(q.runByOtidOrActive(id, otid)), runs)
      const existing = found.find((r) => r.otid === otid)
      if (existing !== undefined) return { run: existing, created: false }
      const active = found.find((r) => r.status === "running")
      if (active !== undefined) return yield* busyConflict(id, active)
      // The database refuses a second running run itself (runs_running, a partial unique index).
      yield* exec(sql`INSERT INTO runs ${
        sql.insert({
          id: created.id,
          conversation_id: id,
          otid,
          kind,
          status: "running",
          last_seq: 0,
          owner: created.owner ?? null,
          created_at: now,
          updated_at: now
        })
      }`)
      if (input !== undefined) {
        // In this transaction itself, not a savepoint of it: the run and its input stand or fall together.
        yield* within({ conversationId: id, ...input }).pipe(Effect.catchTag("ChunkSeqError", Effect.die))
      }
      return { run: created, created: true }
    })).pipe(retry, run)
    })
}
