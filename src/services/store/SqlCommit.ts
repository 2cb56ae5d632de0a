import type { SqlError } from "@effect/sql/SqlError"
import type { Statement } from "@effect/sql/Statement"
import { Clock, Effect, Option } from "effect"
import type { ConversationId } from "../../domain/Ids.js"
import { advanceOpenCalls, checkChunkSeqs, type OpenCall } from "../../domain/ItemLog.js"
import type { Chunk } from "../../domain/Events.js"
import { type NewItem, records, type Write } from "../../domain/History.js"
import { callAnswered, chunkCheckError, conversationNotFound, encodeEventText, newId, rejectDeltaItems, runNotFound } from "./Codec.js"
import { type ItemRow, itemRowsOf, type Planned, plan, touchesOpenCalls } from "./SqlPlan.js"
import type { SqlEngine } from "./SqlStore.js"
import { decodeRows, HeadRow, OpenCallRow, RunSeqRow, ToolCallIdRow, toStoredItems } from "./SqlRows.js"

/** Rows per INSERT: 10 columns each stays far below SQLite's (and PostgreSQL's) bound-parameter limit. */
const BATCH = 400

const batches = <A>(rows: ReadonlyArray<A>): ReadonlyArray<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < rows.length; i += BATCH) out.push(rows.slice(i, i + BATCH))
  return out
}

type ItemInsert = {
  readonly conversation_id: string
  readonly position: number
  readonly id: string
  readonly segment: number
  readonly in_context: 0 | 1
  readonly in_trace: 0 | 1
  readonly is_message: 0 | 1
  readonly type: string
  readonly body: string
  readonly created_at: number
}

/** Item rows at their positions in the conversation, from `first` on. */
export const positioned = (conversationId: string, items: ReadonlyArray<ItemRow>, first: number, segment: number, now: number) =>
  items.map((r, i): ItemInsert => ({ conversation_id: conversationId, position: first + i, segment, created_at: now, ...r }))

/** How a hot path runs its statements and its transaction: the engine's cheap ones where it has them. */
export const hotPath = (engine: SqlEngine) => ({
  exec: engine.exec ?? (<A>(statement: Statement<A>): Effect.Effect<ReadonlyArray<A>, SqlError> => statement),
  transaction: engine.transaction ?? engine.sql.withTransaction
})

/**
 * One logical write in one transaction: items, open calls, chunks, run seqs and finish, or none of it.
 * Its first statement writes the conversation's row, so the transaction holds that conversation from
 * its start (SQLite: the file's write lock; PostgreSQL: the row's lock) and every commit of one
 * conversation, from any process, sees the positions and seqs the previous one left.
 */
export const makeCommit = (engine: SqlEngine) => {
  const { guard, q, retry, source, sql } = engine
  const { exec, transaction } = hotPath(engine)
  /** Keeps `open_calls` equal to the pure rule applied over the segment so far. */
  const updateOpenCalls = (id: ConversationId, newSegment: boolean, rows: ReadonlyArray<ItemInsert>, items: ReadonlyArray<NewItem>) =>
    Effect.gen(function*() {
      if (!touchesOpenCalls(rows)) return
      const current: ReadonlyArray<OpenCall> = newSegment
        ? []
        : (yield* exec(q.openCalls(id)).pipe(Effect.flatMap(decodeRows(OpenCallRow, source))))
          .map((r) => ({ position: r.position, toolCallId: r.tool_call_id }))
      const next = advanceOpenCalls(current, rows.map((r, i) => ({ position: r.position, inContext: r.in_context === 1, item: items[i]!.item })))
      const kept = new Set(next.map((c) => c.position))
      const had = new Set(current.map((c) => c.position))
      const closed = current.filter((c) => !kept.has(c.position)).map((c) => c.position)
      const opened = next.filter((c) => !had.has(c.position))
      if (closed.length > 0) {
        yield* exec(sql`DELETE FROM open_calls WHERE conversation_id = ${id} AND position IN ${sql.in(closed)}`)
      }
      for (const batch of batches(opened)) {
        yield* exec(sql`INSERT INTO open_calls ${
          sql.insert(batch.map((c) => ({ conversation_id: id, position: c.position, tool_call_id: c.toolCallId })))
        }`)
      }
    })

  const none = sql.literal("")

  /**
   * Why the runs refused a write, read now: a chunk that does not follow its run's seq (or names no
   * run of this conversation), or a finished run that is not there. Answers the seqs read when
   * none of these holds (`before` overrides them: a run this write has stamped already).
   */
  const refusal = (id: ConversationId, chunks: ReadonlyArray<Chunk>, finish: Write["finishRun"], runIds: ReadonlyArray<string>, before: ReadonlyMap<string, number>) =>
    Effect.gen(function*() {
      const seqs = yield* exec(q.runSeqs(id, runIds)).pipe(Effect.flatMap(decodeRows(RunSeqRow, source)))
      const known = new Map(seqs.map((r) => [r.id, before.get(r.id) ?? r.last_seq]))
      const check = checkChunkSeqs(chunks, (runId) => known.get(runId))
      if (check._tag !== "Ok") return yield* chunkCheckError(check)
      if (finish !== undefined && !known.has(finish.runId)) return yield* runNotFound(finish.runId)
      return known
    })

  /**
   * Checks and stamps the write's runs in one statement a run: a run's row takes its last new seq
   * only where it stands just before its first new chunk (and belongs to this conversation), and a
   * finished run takes its outcome in the same statement. Only a run that did not move costs a read,
   * to name the error exactly as a check before any write would have.
   */
  const stampRuns = (id: ConversationId, chunks: ReadonlyArray<Chunk>, finish: Write["finishRun"], now: number) =>
    Effect.gen(function*() {
      const first = new Map<string, number>()
      for (const c of chunks) if (!first.has(c.run_id)) first.set(c.run_id, c.seq)
      const runIds = [...new Set([...first.keys(), ...(finish === undefined ? [] : [finish.runId])])]
      if (runIds.length === 0) return
      // The write's own chunks follow each other, whatever the rows say: checked before any statement.
      const own = checkChunkSeqs(chunks, (runId) => first.get(runId)! - 1)
      /** Each stamped run's seq before this write (the read below must not see this write's own stamp). */
      const before = new Map<string, number>()
      let failed: string | undefined
      if (own._tag === "Ok") {
        for (const runId of runIds) {
          const from = first.get(runId)
          const last = own.lastSeqs.get(runId)
          const ended = finish?.runId === runId ? finish : undefined
          const moved = yield* exec(sql`UPDATE runs SET updated_at = ${now}${last === undefined ? none : sql`, last_seq = ${last}`}${
            ended === undefined ? none : sql`, status = ${ended.status}, stop_reason = ${ended.stopReason}`
          } WHERE id = ${runId} AND conversation_id = ${id}${from === undefined ? none : sql` AND last_seq = ${from - 1}`} RETURNING id`)
          if (moved.length === 0) {
            failed = runId
            break
          }
          if (from !== undefined) before.set(runId, from - 1)
        }
        if (failed === undefined) return
      }
      const known = yield* refusal(id, chunks, finish, runIds, before)
      // Another writer moved the run between the statement and the read: the same refusal, from what the read saw.
      const last = failed === undefined ? undefined : known.get(failed)
      if (failed === undefined || last === undefined) return yield* runNotFound(failed ?? runIds[0]!)
      return yield* chunkCheckError({ _tag: "SeqGap", runId: failed, expected: last + 1, got: first.get(failed)! })
    })

  /** What a write needs before its transaction: checked, stamped, its items' ids drawn and bodies encoded. */
  const prepare = (write: Write) =>
    Effect.gen(function*() {
      yield* rejectDeltaItems(write)
      const items = write.items ?? []
      const chunks = write.chunks ?? []
      return {
        now: yield* Clock.currentTimeMillis,
        ids: yield* Effect.forEach(items, () => newId("msg")),
        bodies: items.map((i) => encodeEventText(i.item)),
        chunkBodies: chunks.map((c) => encodeEventText(c))
      }
    })

  /** The write's statements, inside a transaction its caller holds. */
  const statements = (write: Write, prepared: Effect.Effect.Success<ReturnType<typeof prepare>>) =>
    Effect.gen(function*() {
      const { bodies, chunkBodies, ids, now } = prepared
      const id = write.conversationId
      const items = write.items ?? []
      const chunks = write.chunks ?? []
      const finish = write.finishRun
      const newSegment = write.newSegment === true
      // Writing first also keeps SQLite from failing later with SQLITE_BUSY_SNAPSHOT against another process.
      // Recording something makes the conversation the most recent; streamed chunks alone do not.
      const head_ = records(write) ? q.advanceHead(id, now, items.length, newSegment) : q.holdHead(id)
      const [head] = yield* exec(head_).pipe(Effect.flatMap(decodeRows(HeadRow, source)))
      if (head === undefined) return yield* conversationNotFound(id)

      const expected = write.expectOpen ?? []
      if (expected.length > 0) {
        const open = new Set((yield* exec(q.openCallIds(id, expected)).pipe(Effect.flatMap(decodeRows(ToolCallIdRow, source)))).map((r) => r.tool_call_id))
        const closed = expected.find((callId) => !open.has(callId))
        if (closed !== undefined) return yield* callAnswered(id, closed)
      }

      yield* stampRuns(id, chunks, finish, now)

      const rows = positioned(id, itemRowsOf(write, ids, bodies), head.last_position - items.length + 1, head.segment, now)
      if (newSegment) yield* exec(sql`DELETE FROM open_calls WHERE conversation_id = ${id}`)
      for (const batch of batches(rows)) yield* exec(sql`INSERT INTO items ${sql.insert(batch)}`)
      yield* updateOpenCalls(id, newSegment, rows, items)

      const chunkRows = chunks.map((c, i) => ({ run_id: c.run_id, seq: c.seq, body: chunkBodies[i]! }))
      for (const batch of batches(chunkRows)) yield* exec(sql`INSERT INTO chunks ${sql.insert(batch)}`)
      const taken = write.takesSteering ?? []
      if (taken.length > 0) yield* exec(q.dropSteering(id, taken))
      const announced = engine.announce === undefined ? [] : [...new Set([...chunks.map((c) => c.run_id), ...(finish === undefined ? [] : [finish.runId])])]
      if (announced.length > 0) yield* exec(engine.announce!(announced))
      const usage = write.usage ?? []
      if (usage.length > 0) {
        yield* exec(sql`INSERT INTO usage ${sql.insert(usage.map((r) => ({
          conversation_id: r.conversation_id,
          run_id: r.run_id ?? null,
          purpose: r.purpose,
          model: r.model,
          input_tokens: r.input_tokens,
          output_tokens: r.output_tokens,
          cache_read_tokens: r.cache_read_tokens,
          cache_write_tokens: r.cache_write_tokens,
          created_at: r.created_at
        })))}`)
      }
      return rows
    })

  /**
   * The write as one statement (where the engine has them and the write is planned so): answers
   * None when the runs refused it for a reason the read after it no longer sees (another writer
   * moved in between), and the general path then decides.
   */
  const once = (write: Write, planned: Planned) =>
    Effect.gen(function*() {
      const id = write.conversationId
      const written = yield* engine.one!.commit(planned)
      if (!written.found) return yield* conversationNotFound(id)
      if (written.ok) {
        return Option.some(positioned(id, planned.items, written.lastPosition - planned.items.length + 1, written.segment, planned.now))
      }
      yield* refusal(id, write.chunks ?? [], write.finishRun, planned.runs.map((r) => r.id), new Map())
      return Option.none()
    })

  const commit = Effect.fn("Store.commit")(function*(write: Write) {
    const prepared = yield* prepare(write)
    const planned = engine.one === undefined ? undefined : plan(write, prepared)
    const done = planned === undefined ? Option.none() : yield* once(write, planned).pipe(retry, guard)
    const rows = Option.isSome(done) ? done.value : yield* transaction(statements(write, prepared)).pipe(retry, guard)
    return yield* toStoredItems(source)(rows)
  })

  /**
   * The same write inside a transaction the caller already holds (createRun records its input so):
   * no savepoint of its own, so a failure here fails the caller's whole transaction.
   */
  const within = (write: Write) => Effect.flatMap(prepare(write), (prepared) => statements(write, prepared))

  return { commit, within, prepare }
}
