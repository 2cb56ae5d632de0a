import type { SqlError } from "@effect/sql/SqlError"
import { Cause, type Clock, Deferred, Effect, Exit, Option } from "effect"
import type { ChunkSeqError, NotFound, StoreError, ToolCallAnswered } from "../../domain/Errors.js"
import type { StoredItem, Write } from "../../domain/History.js"
import { encodeEventText } from "./Codec.js"

/**
 * The group commit (SqlGroupCommit.ts) on a database where every commit is one statement, atomic on
 * its own (PostgreSQL): a group of streamed commits is one statement and no transaction; a group
 * that mixes in other commits is BEGIN, one statement a commit (one for each stretch of streamed
 * ones), COMMIT — no savepoints. A statement the database refuses there ends the transaction, so
 * the whole group then runs again commit by commit, each with its own outcome. A check that refuses
 * a commit (a seq that does not follow) writes nothing and ends nothing.
 */

export type CommitError = NotFound | ChunkSeqError | ToolCallAnswered | StoreError
export type Commit = (write: Write) => Effect.Effect<ReadonlyArray<StoredItem>, CommitError>

export interface ChunkRow {
  readonly run_id: string
  readonly seq: number
  readonly body: string
}

/** A run's streamed chunks in one group: it must stand at `prev` and takes `last`. */
export interface RunStep {
  readonly id: string
  readonly conversation_id: string
  readonly prev: number
  readonly last: number
}

export interface Pending {
  readonly write: Write
  /** The caller's: its commit is stamped by the clock it runs on, not the writer's. */
  readonly clock: Clock.Clock
  readonly done: Deferred.Deferred<ReadonlyArray<StoredItem>, CommitError>
}

export type Outcomes = Map<Pending, Exit.Exit<ReadonlyArray<StoredItem>, CommitError>>

/** Only streamed chunks: no history items, no run finished, no new segment, no usage. */
export const isStreamOnly = (write: Write): boolean =>
  (write.items ?? []).length === 0 && write.finishRun === undefined && write.newSegment !== true && (write.usage ?? []).length === 0 &&
  (write.chunks ?? []).length > 0

/** The group in arrival order: each stretch of streamed commits together, every other commit on its own. */
export const inStretches = <E, R>(
  group: ReadonlyArray<Pending>,
  stretch: (part: ReadonlyArray<Pending>) => Effect.Effect<void, E, R>,
  other: (pending: Pending) => Effect.Effect<void, E, R>
): Effect.Effect<void, E, R> =>
  Effect.gen(function*() {
    let at = 0
    while (at < group.length) {
      let end = at
      while (end < group.length && isStreamOnly(group[end]!.write)) end++
      if (end > at) {
        yield* stretch(group.slice(at, end))
        at = end
      } else {
        yield* other(group[at]!)
        at++
      }
    }
  })

export interface StepStatements {
  /**
   * The streamed part in one statement: each run that stands at its `prev` takes its `last` and its
   * chunks, the others nothing. Answers the runs that moved.
   */
  readonly writeSteps: (steps: ReadonlyArray<RunStep>, rows: ReadonlyArray<ChunkRow>, now: number) => Effect.Effect<ReadonlyArray<string>, SqlError>
}

/**
 * The streamed commits as steps of their runs, for `writeSteps`: a run's commits in group order
 * that continue each other make one step; a commit that spans runs, or does not continue its run's
 * step (or its conversation), runs alone.
 */
const steps = (group: ReadonlyArray<Pending>) => {
  const byRun = new Map<string, { step: { id: string; conversation_id: string; prev: number; last: number }; pending: Array<Pending> }>()
  const alone: Array<Pending> = []
  const rows: Array<ChunkRow> = []
  for (const pending of group) {
    const own = pending.write.chunks ?? []
    const runId = own[0]!.run_id
    const follows = own.every((c, i) => c.run_id === runId && (i === 0 || c.seq === own[i - 1]!.seq + 1))
    const known = byRun.get(runId)
    if (!follows || (known !== undefined && (known.step.conversation_id !== pending.write.conversationId || own[0]!.seq !== known.step.last + 1))) {
      alone.push(pending)
      continue
    }
    if (known === undefined) {
      byRun.set(runId, { step: { id: runId, conversation_id: pending.write.conversationId, prev: own[0]!.seq - 1, last: own[own.length - 1]!.seq }, pending: [pending] })
    } else {
      known.step.last = own[own.length - 1]!.seq
      known.pending.push(pending)
    }
    for (const c of own) rows.push({ run_id: c.run_id, seq: c.seq, body: encodeEventText(c) })
  }
  return { byRun, alone, rows }
}

/** Fails a group whose transaction a refused statement has ended (no savepoint held it): its commits then run alone. */
const ENDED = Symbol("ended")

/** An outcome that may have come from a statement the database refused (not from a check that wrote nothing). */
const refused = (exit: Exit.Exit<unknown, CommitError>): boolean =>
  Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause) &&
  Cause.failureOption(exit.cause).pipe(Option.match({ onNone: () => true, onSome: (e) => e._tag === "StoreError" }))

export const makeCommitSteps = (deps: {
  readonly alone: (pending: Pending) => Effect.Effect<Exit.Exit<ReadonlyArray<StoredItem>, CommitError>>
  readonly lostRace: (error: unknown) => boolean
  readonly transact: <A, E, R>(effect: Effect.Effect<A, E | SqlError, R>) => Effect.Effect<A, Exclude<E, SqlError> | StoreError, R>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  readonly writeSteps: StepStatements["writeSteps"]
}) =>
(group: ReadonlyArray<Pending>) =>
  Effect.gen(function*() {
    const { alone, lostRace, transact, transaction, writeSteps } = deps
    const outcomes: Outcomes = new Map()
    // Streamed commits alone are a statement each, each its own transaction: none ends another's.
    const inTransaction = !group.every((p) => isStreamOnly(p.write))
    const part = (streamed: ReadonlyArray<Pending>) =>
      Effect.gen(function*() {
        const planned = steps(streamed)
        const moved = new Set(yield* writeSteps([...planned.byRun.values()].map((r) => r.step), planned.rows, yield* streamed[0]!.clock.currentTimeMillis).pipe(
          Effect.catchIf((e) => !lostRace(e), () => (inTransaction ? Effect.fail(ENDED) : Effect.succeed([])))
        ))
        const left = new Set(planned.alone)
        for (const [id, run] of planned.byRun) {
          for (const pending of run.pending) moved.has(id) ? outcomes.set(pending, Exit.succeed([])) : left.add(pending)
        }
        // In group order, after the statement: what did not move runs on its own, to fail (or pass) exactly as alone.
        for (const pending of streamed) if (left.has(pending)) yield* own(pending)
      })
    const own = (pending: Pending) =>
      Effect.flatMap(alone(pending), (exit) => {
        outcomes.set(pending, exit)
        return inTransaction && refused(exit) ? Effect.fail(ENDED) : Effect.void
      })
    const all = Effect.suspend(() => {
      outcomes.clear()
      return inStretches(group, part, own)
    })
    const exit = yield* Effect.exit(transact(inTransaction ? transaction(all) : all))
    const ended = Exit.isFailure(exit) && Cause.failureOption(exit.cause).pipe(Option.exists((e) => e === ENDED))
    for (const pending of group) {
      if (ended) {
        yield* Deferred.done(pending.done, yield* alone(pending))
        continue
      }
      const mine = outcomes.get(pending)
      const outcome = Exit.isFailure(exit) && (mine === undefined || Exit.isSuccess(mine))
        ? Exit.failCause(exit.cause as Cause.Cause<CommitError>)
        : mine!
      yield* Deferred.done(pending.done, outcome)
    }
  })
