import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Statement } from "@effect/sql/Statement"
import { Chunk, Clock, Effect, Either, Option, Stream } from "effect"
import { InvalidInput, type StoreError } from "../../domain/Errors.js"
import { ConversationId } from "../../domain/Ids.js"
import {
  backfillWindow,
  clampLimit,
  decodeCursor,
  DEFAULT_BACKFILL_CAP,
  DEFAULT_BACKFILL_PRIMARY,
  encodeCursor
} from "../../domain/ItemLog.js"
import type { ToolCall } from "../../domain/Messages.js"
import {
  conversationNotFound,
  decodeChunks,
  encodeSettings,
  makeConversation,
  messageNotFound,
  runNotFound
} from "./Codec.js"
import { Store } from "../Store.js"
import { hotPath, makeCommit } from "./SqlCommit.js"
import { makeSqlLedger } from "./SqlLedger.js"
import { makeCreateRun } from "./SqlRuns.js"
import type { OneStatement } from "./SqlPlan.js"
import type { Queries } from "./SqlQueries.js"
import { ChunkRow, ConversationRow, decodeRows, type RowSource, SegmentRow, toConversation, toRuns, toStoredItems } from "./SqlRows.js"

/**
 * The Store over a SQL database, whichever: SQLite (sqlite/) and PostgreSQL (pg/) give it their
 * client, their dialect's statements and how their failures read, and share everything else, so the
 * two agree by construction and pass one contract suite.
 */

const CHUNK_PAGE = 256

/** What a SQL store runs on: the client, its statements, and how its failures become the port's errors. */
export interface SqlEngine {
  readonly sql: SqlClient
  readonly q: Queries
  readonly source: RowSource
  /** SQL failures become StoreErrors naming the store (a defect that carries one too). */
  readonly guard: <A, E, R>(effect: Effect.Effect<A, E | SqlError, R>) => Effect.Effect<A, Exclude<E, SqlError> | StoreError, R>
  /** A write that lost a race with another process is tried again, through the recovery policy. */
  readonly retry: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Several reads that must see one snapshot (a concurrent commit may not land between them). */
  readonly snapshot: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  /** Runs a hot path's statement (SQLite: on its connection at once); by default the statement itself. */
  readonly exec?: <A>(statement: Statement<A>) => Effect.Effect<ReadonlyArray<A>, SqlError>
  /** A hot path's write transaction; by default `sql.withTransaction`. */
  readonly transaction?: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  /** Common writes as one statement each (PostgreSQL): no transaction round trips around them. */
  readonly one?: OneStatement
  /** Names a commit's runs to other processes, delivered when the transaction commits (PostgreSQL NOTIFY). */
  readonly announce?: (runIds: ReadonlyArray<string>) => Statement<unknown>
  /** A unique index refusing a run another writer created meanwhile (`one.createRun` then decides again). */
  readonly uniqueRace?: (error: unknown) => boolean
}

export const makeSqlStore = (engine: SqlEngine) => {
  const { guard: run, q, retry, snapshot, source, sql } = engine
  const { exec } = hotPath(engine)
  const items = toStoredItems(source)
  const conversations = (rows: ReadonlyArray<unknown>) =>
    Effect.flatMap(decodeRows(ConversationRow, source)(rows), Effect.forEach(toConversation(source)))
  const runs = toRuns(source)
  const { commit, prepare, within } = makeCommit(engine)

  const segmentOf = (id: ConversationId) =>
    Effect.flatMap(exec(q.conversationHead(id)).pipe(Effect.flatMap(decodeRows(SegmentRow, source))), ([head]) =>
      head === undefined ? Effect.fail(conversationNotFound(id)) : Effect.succeed(head.segment))

  /**
   * One statement's rows of a conversation, no transaction around it: rows belong to an existing
   * conversation (a foreign key), so only an empty answer asks whether the conversation is there.
   */
  const rowsOf = <A, E, R>(id: ConversationId, read: Effect.Effect<ReadonlyArray<A>, E, R>) =>
    Effect.flatMap(read, (rows) => (rows.length > 0 ? Effect.succeed(rows) : Effect.as(segmentOf(id), rows)))

  /** The rows of a read from the conversation's row (a LEFT JOIN): none means no conversation, a row of NULLs no rows. */
  const joinedRows = <E, R>(id: ConversationId, read: Effect.Effect<ReadonlyArray<Readonly<Record<string, unknown>>>, E, R>) =>
    Effect.flatMap(read, (rows) =>
      rows.length === 0 ? Effect.fail(conversationNotFound(id)) : Effect.succeed(rows.filter((r) => r["id"] !== null)))

  const getConversation = (id: ConversationId) =>
    exec(q.conversation(id)).pipe(
      Effect.flatMap(conversations),
      Effect.flatMap(([c]) => (c === undefined ? Effect.fail(conversationNotFound(id)) : Effect.succeed(c))),
      run
    )

  return Store.of({
    createConversation: Effect.fn("Store.createConversation")(function*(input, options) {
      const conversation = yield* makeConversation(input, options)
      const body = yield* encodeSettings(conversation.settings)
      yield* q.insertConversation({
        id: conversation.id,
        title: conversation.title ?? null,
        settings: body,
        created_at: conversation.created_at,
        updated_at: conversation.updated_at,
        parent_id: conversation.parent?.conversation_id ?? null,
        parent_call: conversation.parent?.tool_call_id ?? null,
        forked_from: conversation.forked_from?.conversation_id ?? null,
        forked_at: conversation.forked_from?.at ?? null
      }).pipe(retry, run)
      if (conversation.parent === undefined) return conversation
      // The insert did nothing when this call has a child already: that one is the answer.
      const [child] = yield* q.childOf(conversation.parent.conversation_id, conversation.parent.tool_call_id).pipe(Effect.flatMap(conversations), run)
      return child ?? conversation
    }),

    getConversation,

    listConversations: Effect.fn("Store.listConversations")(function*(options) {
      const limit = clampLimit(options?.limit, 50, 500)
      const cursor = options?.before === undefined ? Option.none() : decodeCursor(options.before)
      if (options?.before !== undefined && Option.isNone(cursor)) {
        return yield* new InvalidInput({ message: `Not a conversation list cursor: ${options.before}` })
      }
      const rows = yield* q.conversationsPage(Option.getOrUndefined(cursor), limit + 1, options).pipe(run)
      const decoded = yield* decodeRows(ConversationRow, source)(rows)
      const page = decoded.slice(0, limit)
      const last = page[page.length - 1]
      return {
        items: yield* Effect.forEach(page, toConversation(source)),
        ...(decoded.length > limit && last !== undefined
          ? { next: encodeCursor({ updatedAt: last.updated_at, touched: last.touched }) }
          : {})
      }
    }),

    updateConversation: Effect.fn("Store.updateConversation")(function*(id, patch) {
      const now = yield* Clock.currentTimeMillis
      const settings = patch.settings === undefined ? null : yield* encodeSettings(patch.settings)
      const updated = yield* q.updateConversation(id, now, settings, patch.title ?? null).pipe(retry, run)
      if (updated.length === 0) return yield* conversationNotFound(id)
      return yield* getConversation(id)
    }),

    deleteConversation: Effect.fn("Store.deleteConversation")(function*(id) {
      // Foreign keys cascade to items, open calls, runs and their chunks.
      const deleted = yield* sql<{ readonly id: string }>`DELETE FROM conversations WHERE id = ${id} RETURNING id`
        .pipe(retry, run)
      if (deleted.length === 0) return yield* conversationNotFound(id)
    }),

    commit,

    listItems: Effect.fn("Store.listItems")(function*(id, query) {
      const limit = clampLimit(query?.limit, 100, 1000)
      const before = query?.before ?? Number.MAX_SAFE_INTEGER
      const after = query?.after
      const rows = yield* (
        after !== undefined && q.itemsAfterFrom !== undefined
          ? Effect.map(joinedRows(id, exec(q.itemsAfterFrom(id, after, before, limit))), (r) => r.sort((a, b) => Number(a["position"]) - Number(b["position"])))
          : rowsOf(
            id,
            after !== undefined
              ? exec(q.itemsAfter(id, after, before, limit))
              : Effect.map(exec(q.itemsBefore(id, before, limit)), (r) => [...r].reverse())
          )
      ).pipe(run)
      return yield* items(rows)
    }),

    getItem: Effect.fn("Store.getItem")(function*(id) {
      const [stored] = yield* q.itemById(id).pipe(run, Effect.flatMap(items))
      if (stored === undefined) return yield* messageNotFound(id)
      return stored
    }),

    modelContext: Effect.fn("Store.modelContext")(function*(id) {
      const rows = yield* snapshot(Effect.flatMap(segmentOf(id), (segment) => q.contextItems(id, segment))).pipe(run)
      return yield* items(rows)
    }),

    currentSegment: (id) => run(segmentOf(id)),

    currentSegmentItems: Effect.fn("Store.currentSegmentItems")(function*(id) {
      const rows = yield* exec(q.currentSegmentItems(id)).pipe(run)
      if (rows.length === 0) return yield* conversationNotFound(id)
      const segment = Number(rows[0]!["current_segment"])
      const found = rows.filter((r) => r["id"] !== null).sort((a, b) => Number(a["position"]) - Number(b["position"]))
      return { segment, items: yield* items(found) }
    }),

    segmentItems: Effect.fn("Store.segmentItems")(function*(id, segment) {
      const rows = yield* rowsOf(id, q.segmentItems(id, segment)).pipe(run)
      return yield* items(rows)
    }),

    exportSegment: Effect.fn("Store.exportSegment")(function*(id, segment) {
      const rows = yield* snapshot(Effect.zipRight(segmentOf(id), q.traceBodies(id, segment))).pipe(run)
      return rows.map((r) => `${r.body}\n`).join("")
    }),

    toolReturns: Effect.fn("Store.toolReturns")(function*(id, toolCallIds) {
      if (toolCallIds.length === 0) return yield* Effect.as(run(segmentOf(id)), [])
      const rows = yield* rowsOf(id, q.toolReturns(id, toolCallIds)).pipe(run)
      return yield* items(rows)
    }),

    pendingApprovals: Effect.fn("Store.pendingApprovals")(function*(id) {
      const rows = yield* joinedRows(id, exec(q.openCallItems(id))).pipe(run)
      const calls = yield* items(rows)
      return calls.flatMap((s): Array<ToolCall> => (s.item.type === "tool_call" ? [s.item] : []))
    }),

    backfill: Effect.fn("Store.backfill")(function*(id, options) {
      const cap = options?.cap ?? DEFAULT_BACKFILL_CAP
      const rows = yield* rowsOf(id, q.renderTail(id, Math.max(0, cap))).pipe(run)
      const tail = yield* items([...rows].reverse())
      return backfillWindow(tail, { primary: options?.primary ?? DEFAULT_BACKFILL_PRIMARY, cap })
    }),

    createRun: makeCreateRun(engine, { prepare, within }),

    getRun: Effect.fn("Store.getRun")(function*(id) {
      const [found] = yield* q.runById(id).pipe(run, Effect.flatMap(runs))
      if (found === undefined) return yield* runNotFound(id)
      return found
    }),

    runByOtid: (id, otid) => exec(q.runByOtid(id, otid)).pipe(run, Effect.flatMap(runs), Effect.map((r) => Option.fromNullable(r[0]))),

    activeRun: (id) => exec(q.activeRun(id)).pipe(run, Effect.flatMap(runs), Effect.map((r) => Option.fromNullable(r[0]))),

    claimRun: (id, owner) => q.claimRun(id, owner).pipe(run, Effect.asVoid),

    runningRuns: q.runningRuns().pipe(run, Effect.flatMap(runs)),

    ...makeSqlLedger(engine, (id) => joinedRows(id, exec(q.heldSteering(id)))),

    readChunks: (runId, after) =>
      Stream.unwrap(Effect.gen(function*() {
        const [found] = yield* q.runById(runId).pipe(run)
        if (found === undefined) return yield* runNotFound(runId)
        return Stream.paginateChunkEffect(after, (cursor) =>
          q.chunksAfter(runId, cursor, CHUNK_PAGE).pipe(
            run,
            Effect.flatMap(decodeRows(ChunkRow, source)),
            Effect.flatMap((page) =>
              Either.map(decodeChunks(page.map((row) => row.body), source.label), (decoded) =>
                [
                  Chunk.unsafeFromArray(decoded),
                  page.length < CHUNK_PAGE ? Option.none() : Option.some(page[page.length - 1]!.seq)
                ] as const)
            )
          ))
      }))
  })
}
