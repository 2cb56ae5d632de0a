import type { SqlClient } from "@effect/sql/SqlClient"
import { Clock, Deferred, Effect, Exit, Queue } from "effect"
import { type ChunkSeqError, type NotFound, StoreError, type ToolCallAnswered } from "../../../domain/Errors.js"
import type { Chunk } from "../../../domain/Events.js"
import type { StoredItem, Write } from "../../../domain/History.js"
import { encodeEventText } from "../Codec.js"
import { guard, retryBusy } from "./Failures.js"

/**
 * Group commit: the commits that are waiting when the writer is free go into one SQLite
 * transaction, so a thousand conversations streaming at once pay for one WAL write of the pages
 * they share instead of one per delta. Batch by arrival, never by waiting: a lone commit runs at
 * once. Each commit keeps its own outcome: the common one (a run's streamed chunks, nothing
 * recorded) is checked here and written with the others in a few multi-row statements; any other
 * commit, and any streamed one that does not check out, runs on its own inside a savepoint, so its
 * failure is its own and rolls back only its own writes.
 */

type CommitError = NotFound | ChunkSeqError | ToolCallAnswered | StoreError
type Commit = (write: Write) => Effect.Effect<ReadonlyArray<StoredItem>, CommitError>

interface Pending {
  readonly write: Write
  readonly done: Deferred.Deferred<ReadonlyArray<StoredItem>, CommitError>
}

/** Commits taken into one transaction at most (the rest wait for the next one). */
const MAX_GROUP = 2048
/** Rows per multi-row statement: 3 parameters a row stays far below SQLite's limit. */
const ROWS = 512

/** Only streamed chunks: no history items, no run finished, no new segment. */
const isStreamOnly = (write: Write): boolean =>
  (write.items ?? []).length === 0 && write.finishRun === undefined && write.newSegment !== true && (write.chunks ?? []).length > 0

/**
 * Statements are prepared once per distinct text; lists are padded to a power of two (repeating an
 * element changes nothing) so a few texts serve every group size.
 */
const padded = <A>(xs: ReadonlyArray<A>): ReadonlyArray<A> => {
  let size = 1
  while (size < xs.length) size *= 2
  return size === xs.length ? xs : [...xs, ...Array.from({ length: size - xs.length }, () => xs[0]!)]
}

/** Splits a list into power-of-two pieces (largest first) of at most ROWS, for inserts that cannot be padded. */
const pieces = <A>(xs: ReadonlyArray<A>): ReadonlyArray<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  let at = 0
  while (at < xs.length) {
    let size = ROWS
    while (size > xs.length - at) size /= 2
    out.push(xs.slice(at, at + size))
    at += size
  }
  return out
}

const texts = new Map<string, string>()

/** `(?, ?), (?, ?), …`, made once per shape. */
const placeholders = (rows: number, columns: number): string => {
  const key = `${rows}x${columns}`
  let text = texts.get(key)
  if (text === undefined) {
    text = Array.from({ length: rows }, () => `(${Array.from({ length: columns }, () => "?").join(", ")})`).join(", ")
    texts.set(key, text)
  }
  return text
}

export const makeGroupCommit = (sql: SqlClient, path: string, single: Commit) =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<Pending>()

    /** Streamed commits, checked against the runs' last seqs and written together; the rest go to `single`. */
    const streamed = (group: ReadonlyArray<Pending>, outcomes: Map<Pending, Exit.Exit<ReadonlyArray<StoredItem>, CommitError>>) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const runIds = [...new Set(group.flatMap((p) => (p.write.chunks ?? []).map((c) => c.run_id)))]
        // A write first, so the transaction holds the write lock before it reads anything.
        const runs = new Map<string, { readonly conversation: string; last: number }>()
        for (const ids of pieces(runIds)) {
          const list = padded(ids)
          const rows = yield* sql.unsafe<{ readonly id: string; readonly conversation_id: string; readonly last_seq: number }>(
            `UPDATE runs SET updated_at = ? WHERE id IN ${placeholders(1, list.length)} RETURNING id, conversation_id, last_seq`,
            [now, ...list]
          )
          for (const row of rows) runs.set(row.id, { conversation: row.conversation_id, last: row.last_seq })
        }
        const accepted: Array<Chunk> = []
        const alone: Array<Pending> = []
        for (const pending of group) {
          const chunks = pending.write.chunks ?? []
          const next = new Map<string, number>()
          const fits = chunks.every((chunk) => {
            const run = runs.get(chunk.run_id)
            if (run === undefined || run.conversation !== pending.write.conversationId) return false
            const last = next.get(chunk.run_id) ?? run.last
            next.set(chunk.run_id, chunk.seq)
            return chunk.seq === last + 1
          })
          if (!fits) {
            alone.push(pending)
            continue
          }
          for (const [id, last] of next) runs.get(id)!.last = last
          accepted.push(...chunks)
          outcomes.set(pending, Exit.succeed([]))
        }
        for (const rows of pieces(accepted)) {
          yield* sql.unsafe(
            `INSERT INTO chunks (run_id, seq, body) VALUES ${placeholders(rows.length, 3)}`,
            rows.flatMap((c) => [c.run_id, c.seq, encodeEventText(c)])
          )
        }
        const moved = [...new Set(accepted.map((c) => c.run_id))].map((id) => [id, runs.get(id)!.last] as const)
        for (const rows of pieces(moved)) {
          const list = padded(rows)
          yield* sql.unsafe(
            `UPDATE runs SET last_seq = v.column2 FROM (VALUES ${placeholders(list.length, 2)}) AS v WHERE runs.id = v.column1`,
            list.flatMap(([id, last]) => [id, last])
          )
        }
        // What did not check out runs on its own, to fail (or pass) exactly as it would alone.
        for (const pending of alone) outcomes.set(pending, yield* Effect.exit(single(pending.write)))
      })

    /** One transaction for the whole group, in arrival order; every commit gets its own outcome. */
    const commitGroup = (group: ReadonlyArray<Pending>) =>
      Effect.gen(function*() {
        const outcomes = new Map<Pending, Exit.Exit<ReadonlyArray<StoredItem>, CommitError>>()
        const transaction = Effect.gen(function*() {
          outcomes.clear()
          let at = 0
          while (at < group.length) {
            let end = at
            while (end < group.length && isStreamOnly(group[end]!.write)) end++
            if (end > at) {
              yield* streamed(group.slice(at, end), outcomes)
              at = end
            } else {
              outcomes.set(group[at]!, yield* Effect.exit(single(group[at]!.write)))
              at++
            }
          }
        })
        const exit = yield* Effect.exit(sql.withTransaction(transaction).pipe(retryBusy, guard(path)))
        for (const pending of group) {
          const own = outcomes.get(pending)
          // A transaction that failed as a whole undid every commit in it, whatever each one said.
          const outcome = Exit.isFailure(exit) && (own === undefined || Exit.isSuccess(own)) ? Exit.failCause(exit.cause) : own!
          yield* Deferred.done(pending.done, outcome)
        }
      })

    const writer = Queue.takeBetween(queue, 1, MAX_GROUP).pipe(
      Effect.flatMap((group) => Effect.uninterruptible(commitGroup([...group]))),
      Effect.forever
    )
    const closedError = new StoreError({ reason: "closed", path, message: `The store on ${path} was already closed (its layer's scope ended); this is a bug in the caller.` })
    let closed = false
    // Added before the writer starts, so it runs after the writer has stopped (and finished its group):
    // what is still queued then fails rather than leave its callers waiting.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        return Effect.flatMap(Queue.takeAll(queue), (left) => Effect.forEach(left, (pending) => Deferred.fail(pending.done, closedError), { discard: true }))
      })
    )
    // Untraced: its callers' spans (baton.store.commit) say what was committed; a span per SQL
    // statement of every group would be several spans per streamed chunk.
    yield* Effect.forkScoped(Effect.withTracerEnabled(writer, false))

    return (write: Write): Effect.Effect<ReadonlyArray<StoredItem>, CommitError> =>
      Effect.suspend(() =>
        closed
          ? Effect.fail(closedError)
          : Effect.flatMap(Deferred.make<ReadonlyArray<StoredItem>, CommitError>(), (done) =>
            Effect.zipRight(Queue.offer(queue, { write, done }), Deferred.await(done)))
      )
  })
