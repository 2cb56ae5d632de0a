import type { SqlClient } from "@effect/sql/SqlClient"
import { Chunk, Clock, Effect, Either, Option, Stream } from "effect"
import { InvalidInput } from "../../../domain/Errors.js"
import { ConversationId } from "../../../domain/Ids.js"
import {
  backfillWindow,
  clampLimit,
  decodeCursor,
  DEFAULT_BACKFILL_CAP,
  DEFAULT_BACKFILL_PRIMARY,
  encodeCursor
} from "../../../domain/ItemLog.js"
import type { ToolCall } from "../../../domain/Messages.js"
import {
  busyConflict,
  conversationNotFound,
  decodeChunks,
  encodeSettings,
  makeConversation,
  messageNotFound,
  newId,
  runNotFound
} from "../Codec.js"
import { Store } from "../../Store.js"
import { makeCommit } from "./Commit.js"
import { makeGroupCommit } from "./GroupCommit.js"
import { guard, retryBusy } from "./Failures.js"
import { makeQueries } from "./Queries.js"
import { ChunkRow, ConversationRow, decodeRows, toConversation, toRuns, toStoredItems } from "./Rows.js"

/**
 * services/store/sqlite/ is the Store on one SQLite file: opening and checking it (Open, Header),
 * the schema and its migrations, the queries, the one-transaction commit, and how SQLite's failures
 * become StoreErrors (and lost races retries, through the recovery policy).
 */

const CHUNK_PAGE = 256

/** The Store over one SQLite connection; `path` names the file in every error. Its group-commit writer lives in the scope. */
export const makeSqliteStore = (sql: SqlClient, path: string) => Effect.gen(function*() {
  const q = makeQueries(sql)
  const commit = yield* makeGroupCommit(sql, path, makeCommit(sql, q, path))
  const run = guard(path)
  /** Several reads that must see one snapshot (a concurrent commit may not land between them). */
  const snapshot = <A, E, R>(effect: Effect.Effect<A, E, R>) => sql.withTransaction(effect)
  const items = toStoredItems(path)
  const conversations = (rows: ReadonlyArray<unknown>) =>
    Effect.flatMap(decodeRows(ConversationRow, path)(rows), Effect.forEach(toConversation(path)))
  const runs = toRuns(path)

  const segmentOf = (id: ConversationId) =>
    Effect.flatMap(q.conversationHead(id), ([head]) =>
      head === undefined ? Effect.fail(conversationNotFound(id)) : Effect.succeed(head.segment))

  const getConversation = (id: ConversationId) =>
    q.conversation(id).pipe(
      Effect.flatMap(conversations),
      Effect.flatMap(([c]) => (c === undefined ? Effect.fail(conversationNotFound(id)) : Effect.succeed(c))),
      run
    )

  return Store.of({
    createConversation: Effect.fn("Store.createConversation")(function*(input, options) {
      const conversation = yield* makeConversation(input, options)
      const body = yield* encodeSettings(conversation.settings)
      yield* sql`INSERT INTO conversations (id, title, settings, created_at, updated_at, touched)
        VALUES (${conversation.id}, ${conversation.title ?? null}, ${body}, ${conversation.created_at},
                ${conversation.updated_at}, (SELECT coalesce(max(touched), 0) + 1 FROM conversations))`
        .pipe(retryBusy, run)
      return conversation
    }),

    getConversation,

    listConversations: Effect.fn("Store.listConversations")(function*(options) {
      const limit = clampLimit(options?.limit, 50, 500)
      const cursor = options?.before === undefined ? Option.none() : decodeCursor(options.before)
      if (options?.before !== undefined && Option.isNone(cursor)) {
        return yield* new InvalidInput({ message: `Not a conversation list cursor: ${options.before}` })
      }
      const rows = yield* q.conversationsPage(Option.getOrUndefined(cursor), limit + 1).pipe(run)
      const decoded = yield* decodeRows(ConversationRow, path)(rows)
      const page = decoded.slice(0, limit)
      const last = page[page.length - 1]
      return {
        items: yield* Effect.forEach(page, toConversation(path)),
        ...(decoded.length > limit && last !== undefined
          ? { next: encodeCursor({ updatedAt: last.updated_at, touched: last.touched }) }
          : {})
      }
    }),

    updateConversation: Effect.fn("Store.updateConversation")(function*(id, patch) {
      const now = yield* Clock.currentTimeMillis
      const settings = patch.settings === undefined ? null : yield* encodeSettings(patch.settings)
      const updated = yield* sql<{ readonly id: string }>`UPDATE conversations
        SET updated_at = ${now},
            touched = (SELECT coalesce(max(touched), 0) + 1 FROM conversations),
            settings = coalesce(${settings}, settings),
            title = coalesce(${patch.title ?? null}, title)
        WHERE id = ${id} RETURNING id`.pipe(retryBusy, run)
      if (updated.length === 0) return yield* conversationNotFound(id)
      return yield* getConversation(id)
    }),

    deleteConversation: Effect.fn("Store.deleteConversation")(function*(id) {
      // Foreign keys cascade to items, open calls, runs and their chunks.
      const deleted = yield* sql<{ readonly id: string }>`DELETE FROM conversations WHERE id = ${id} RETURNING id`
        .pipe(retryBusy, run)
      if (deleted.length === 0) return yield* conversationNotFound(id)
    }),

    commit,

    listItems: Effect.fn("Store.listItems")(function*(id, query) {
      const limit = clampLimit(query?.limit, 100, 1000)
      const before = query?.before ?? Number.MAX_SAFE_INTEGER
      const rows = yield* snapshot(Effect.zipRight(
        segmentOf(id),
        query?.after !== undefined
          ? q.itemsAfter(id, query.after, before, limit)
          : Effect.map(q.itemsBefore(id, before, limit), (r) => [...r].reverse())
      )).pipe(run)
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

    segmentItems: Effect.fn("Store.segmentItems")(function*(id, segment) {
      const rows = yield* snapshot(Effect.zipRight(segmentOf(id), q.segmentItems(id, segment))).pipe(run)
      return yield* items(rows)
    }),

    exportSegment: Effect.fn("Store.exportSegment")(function*(id, segment) {
      const rows = yield* snapshot(Effect.zipRight(segmentOf(id), q.traceBodies(id, segment))).pipe(run)
      return rows.map((r) => `${r.body}\n`).join("")
    }),

    pendingApprovals: Effect.fn("Store.pendingApprovals")(function*(id) {
      const rows = yield* snapshot(Effect.zipRight(segmentOf(id), q.openCallItems(id))).pipe(run)
      const calls = yield* items(rows)
      return calls.flatMap((s): Array<ToolCall> => (s.item.type === "tool_call" ? [s.item] : []))
    }),

    backfill: Effect.fn("Store.backfill")(function*(id, options) {
      const cap = options?.cap ?? DEFAULT_BACKFILL_CAP
      const rows = yield* snapshot(Effect.zipRight(segmentOf(id), q.renderTail(id, Math.max(0, cap)))).pipe(run)
      const tail = yield* items([...rows].reverse())
      return backfillWindow(tail, { primary: options?.primary ?? DEFAULT_BACKFILL_PRIMARY, cap })
    }),

    createRun: Effect.fn("Store.createRun")(function*(id, otid, kind, options) {
      const runId = yield* newId("run")
      const now = yield* Clock.currentTimeMillis
      const owner = options?.owner ?? null
      return yield* sql.withTransaction(Effect.gen(function*() {
        // The otid decides first: a repeated otid returns its run, running or not.
        const [existing] = yield* Effect.flatMap(q.runByOtid(id, otid), runs)
        if (existing !== undefined) return { run: existing, created: false }
        const [active] = yield* Effect.flatMap(q.activeRun(id), runs)
        if (active !== undefined) return yield* busyConflict(id, active)
        const inserted = yield* sql<{ readonly id: string }>`INSERT INTO runs
          (id, conversation_id, otid, kind, status, last_seq, owner, created_at, updated_at)
          SELECT ${runId}, id, ${otid}, ${kind}, 'running', 0, ${owner}, ${now}, ${now} FROM conversations WHERE id = ${id}
          RETURNING id`
        if (inserted.length === 0) return yield* conversationNotFound(id)
        const [found] = yield* Effect.flatMap(q.runById(runId), runs)
        return { run: found!, created: true }
      })).pipe(retryBusy, run)
    }),

    getRun: Effect.fn("Store.getRun")(function*(id) {
      const [found] = yield* q.runById(id).pipe(run, Effect.flatMap(runs))
      if (found === undefined) return yield* runNotFound(id)
      return found
    }),

    runByOtid: (id, otid) => q.runByOtid(id, otid).pipe(run, Effect.flatMap(runs), Effect.map((r) => Option.fromNullable(r[0]))),

    activeRun: (id) => q.activeRun(id).pipe(run, Effect.flatMap(runs), Effect.map((r) => Option.fromNullable(r[0]))),

    runningRuns: q.runningRuns().pipe(run, Effect.flatMap(runs)),

    readChunks: (runId, after) =>
      Stream.unwrap(Effect.gen(function*() {
        const [found] = yield* q.runById(runId).pipe(run)
        if (found === undefined) return yield* runNotFound(runId)
        return Stream.paginateChunkEffect(after, (cursor) =>
          q.chunksAfter(runId, cursor, CHUNK_PAGE).pipe(
            run,
            Effect.flatMap(decodeRows(ChunkRow, path)),
            Effect.flatMap((page) =>
              Either.map(decodeChunks(page.map((row) => row.body), path), (decoded) =>
                [
                  Chunk.unsafeFromArray(decoded),
                  page.length < CHUNK_PAGE ? Option.none() : Option.some(page[page.length - 1]!.seq)
                ] as const)
            )
          ))
      }))
  })
})
