import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Chunk as EChunk, Deferred, Effect, Exit, Fiber, FiberId, Queue } from "effect"
import { StoreError } from "../../domain/Errors.js"
import type { Chunk } from "../../domain/Events.js"
import type { StoredItem, Write } from "../../domain/History.js"
import { takeBatch } from "../Batches.js"
import { encodeEventText } from "./Codec.js"
import { type ChunkRow, type Commit, type CommitError, inStretches, isStreamOnly, makeCommitSteps, type Outcomes, type Pending, type StepStatements } from "./GroupSteps.js"

/**
 * Group commit: the commits that are waiting when the writer is free go into one transaction, so a
 * thousand conversations streaming at once pay for one write of what they share (SQLite's WAL pages,
 * PostgreSQL's round trips and its commit) instead of one per delta. Batch by arrival, never by
 * waiting: a lone commit runs at once. Each commit keeps its own outcome: the common one (a run's
 * streamed chunks, nothing recorded) is checked against the runs' rows, locked first, and written
 * with the others in a few multi-row statements; any other commit, and any streamed one that does
 * not check out, runs on its own inside a savepoint, so its failure is its own and rolls back only
 * its own writes. The database's dialect gives the statements (GroupStatements); one whose every
 * commit is one statement needs no savepoint (GroupSteps.ts).
 */

export interface RunRow {
  readonly id: string
  readonly conversation_id: string
  /** A number, or the text PostgreSQL gives a bigint. */
  readonly last_seq: number | string
}

/** The streamed part as three statements, checked here between them (SQLite); each takes any number of rows. */
export interface LockStatements {
  /** Stamps the runs and holds them for the transaction (writing first: SQLite takes its write lock here). */
  readonly lockRuns: (ids: ReadonlyArray<string>, now: number) => Effect.Effect<ReadonlyArray<RunRow>, SqlError>
  readonly insertChunks: (rows: ReadonlyArray<ChunkRow>) => Effect.Effect<void, SqlError>
  readonly setLastSeqs: (runs: ReadonlyArray<readonly [id: string, lastSeq: number]>) => Effect.Effect<void, SqlError>
}

/** What one database says for the streamed part of a group: three statements, or one (GroupSteps.ts). */
export type GroupStatements = LockStatements | StepStatements

export interface GroupEngine {
  readonly sql: SqlClient
  /** Names the store in the error a commit after close gets. */
  readonly label: string
  readonly statements: GroupStatements
  /** The whole group's transaction: a lost race tried again, SQL failures made StoreErrors. */
  readonly transact: <A, E, R>(effect: Effect.Effect<A, E | SqlError, R>) => Effect.Effect<A, Exclude<E, SqlError> | StoreError, R>
  /** A failure that must undo the whole group for `transact` to try again, not only the streamed part. */
  readonly lostRace: (error: unknown) => boolean
  /** The group's transaction (and a streamed part's savepoint inside it); by default `sql.withTransaction`. */
  readonly transaction?: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
}

/** Queued by closing the scope, after every commit accepted: the writer stops once it has written them. */
const STOP = Symbol("stop")

/** Commits taken into one transaction at most (the rest wait for the next one). */
const MAX_GROUP = 2048

/** Which streamed commits continue their runs' seqs (in group order), the chunks they add, and the runs' new last seqs. */
const check = (group: ReadonlyArray<Pending>, rows: ReadonlyArray<RunRow>) => {
  const runs = new Map(rows.map((row) => [row.id, { conversation: row.conversation_id, last: Number(row.last_seq) }]))
  const accepted: Array<Pending> = []
  const alone: Array<Pending> = []
  const chunks: Array<Chunk> = []
  for (const pending of group) {
    const own = pending.write.chunks ?? []
    const next = new Map<string, number>()
    const fits = own.every((chunk) => {
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
    accepted.push(pending)
    chunks.push(...own)
  }
  const lastSeqs = [...new Set(chunks.map((c) => c.run_id))].map((id) => [id, runs.get(id)!.last] as const)
  return { accepted, alone, chunks, lastSeqs }
}

export const makeGroupCommit = (engine: GroupEngine, single: Commit) =>
  Effect.gen(function*() {
    const { label, lostRace, sql, statements, transact } = engine
    const transaction = engine.transaction ?? sql.withTransaction
    const queue = yield* Queue.unbounded<Pending | typeof STOP>()

    const alone = (pending: Pending) => Effect.exit(Effect.withClock(single(pending.write), pending.clock))
    const commitSteps = (writeSteps: StepStatements["writeSteps"]) => makeCommitSteps({ alone, lostRace, transact, transaction, writeSteps })

    /** Streamed commits, checked against the runs' last seqs and written together; the rest go to `single`. */
    const streamed = (statements: LockStatements, group: ReadonlyArray<Pending>, outcomes: Outcomes, lone: boolean) =>
      Effect.gen(function*() {
        const now = yield* group[0]!.clock.currentTimeMillis
        const runIds = [...new Set(group.flatMap((p) => (p.write.chunks ?? []).map((c) => c.run_id)))].sort()
        const write = Effect.gen(function*() {
          const checked = check(group, yield* statements.lockRuns(runIds, now))
          if (checked.chunks.length > 0) {
            yield* statements.insertChunks(checked.chunks.map((c) => ({ run_id: c.run_id, seq: c.seq, body: encodeEventText(c) })))
            yield* statements.setLastSeqs(checked.lastSeqs)
          }
          return checked
        })
        // In a savepoint: a statement the database refuses (another process wrote the same run) sends
        // these commits to run alone, instead of failing the unrelated commits of the group with it.
        // A lone commit has no such company; its failure is its own already.
        const written = lone
          ? yield* write
          : yield* transaction(write).pipe(Effect.catchIf((e) => !lostRace(e), () => Effect.succeed({ accepted: [], alone: group })))
        for (const pending of written.accepted) outcomes.set(pending, Exit.succeed([]))
        // What did not check out runs on its own, to fail (or pass) exactly as it would alone.
        for (const pending of written.alone) outcomes.set(pending, yield* alone(pending))
      })

    /** One transaction for the whole group, in arrival order; every commit gets its own outcome. */
    const commitGroup = (group: ReadonlyArray<Pending>) =>
      Effect.gen(function*() {
        // A lone commit that records something is its own transaction already: no group around it.
        if (group.length === 1 && !isStreamOnly(group[0]!.write)) {
          return yield* Deferred.done(group[0]!.done, yield* alone(group[0]!))
        }
        if ("writeSteps" in statements) return yield* commitSteps(statements.writeSteps)(group)
        const outcomes: Outcomes = new Map()
        const group_ = Effect.suspend(() => {
          outcomes.clear()
          return inStretches(
            group,
            (part) => streamed(statements, part, outcomes, group.length === 1),
            (pending) => Effect.map(alone(pending), (exit) => void outcomes.set(pending, exit))
          )
        })
        const exit = yield* Effect.exit(transact(transaction(group_)))
        for (const pending of group) {
          const own = outcomes.get(pending)
          // A transaction that failed as a whole undid every commit in it, whatever each one said.
          const outcome = Exit.isFailure(exit) && (own === undefined || Exit.isSuccess(own)) ? Exit.failCause(exit.cause) : own!
          yield* Deferred.done(pending.done, outcome)
        }
      })

    const closedError = new StoreError({ reason: "closed", path: label, message: `The store on ${label} was already closed (its layer's scope ended); this is a bug in the caller.` })
    let closed = false

    // Never interrupted: a taker interrupted just as a commit is handed to it would drop that commit
    // and leave its caller waiting forever. It stops when it takes STOP, which closing the scope
    // queues after the last commit it accepted, so every accepted commit is written.
    const writer: Effect.Effect<void> = Effect.flatMap(takeBatch(queue, MAX_GROUP), (taken) => {
      const group = EChunk.toReadonlyArray(taken)
      const pending = group.filter((p): p is Pending => p !== STOP)
      const commit = pending.length > 0 ? commitGroup(pending) : Effect.void
      return pending.length === group.length ? Effect.zipRight(commit, writer) : commit
    })
    // Untraced: its callers' spans (baton.store.commit) say what was committed; a span per SQL
    // statement of every group would be several spans per streamed chunk.
    const running = yield* Effect.forkDaemon(Effect.withTracerEnabled(writer, false))
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        queue.unsafeOffer(STOP)
        return Fiber.await(running)
      })
    )

    return (write: Write): Effect.Effect<ReadonlyArray<StoredItem>, CommitError> =>
      Effect.clockWith((clock) =>
        Effect.suspend(() => {
          if (closed) return Effect.fail(closedError)
          // Checked and queued in one step: nothing is queued after STOP.
          const done = Deferred.unsafeMake<ReadonlyArray<StoredItem>, CommitError>(FiberId.none)
          queue.unsafeOffer({ write, clock, done })
          return Deferred.await(done)
        })
      )
  })
