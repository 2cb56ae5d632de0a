import { Chunk, Clock, Effect, Either, Layer, Option, Stream } from "effect"
import type { ToolCall } from "../../domain/Messages.js"
import { records, type Write } from "../../domain/History.js"
import { ConversationId, MessageId, type Otid, RunId } from "../../domain/Ids.js"
import {
  advanceOpenCalls,
  backfillWindow,
  checkChunkSeqs,
  clampLimit,
  DEFAULT_BACKFILL_CAP,
  DEFAULT_BACKFILL_PRIMARY,
  defaultFlags,
  isMessageType,
} from "../../domain/ItemLog.js"
import {
  callAnswered,
  chunkCheckError,
  conversationNotFound,
  busyConflict,
  decodeChunks,
  encodeEventText,
  makeConversation,
  messageNotFound,
  newId,
  newRun,
  rejectDeltaItems,
  runNotFound
} from "./Codec.js"
import type { Run } from "../../domain/Run.js"
import { Store } from "../Store.js"
import { makeMemoryLedger } from "./MemoryLedger.js"
import { type ConversationState, conversationsPage, type Row, storedAll, toStored } from "./MemoryRows.js"

const pageSize = 256

/**
 * The in-memory Store for tests. Items are kept as the same JSON text the SQLite layer stores and
 * decoded on every read, so both layers return identical values and exports.
 *
 * State is plain mutable maps: every method validates first and then applies its changes in one
 * synchronous step, so a failing commit leaves nothing behind and no fiber sees half a write.
 */
export const layerMemory: Layer.Layer<Store> = Layer.sync(Store, () => {
  const conversations = new Map<string, ConversationState>()
  const items = new Map<string, { readonly conversationId: ConversationId; readonly position: number }>()
  const runs = new Map<string, Run>()
  const chunks = new Map<string, Array<string>>()
  const otids = new Map<string, RunId>()
  let touchCounter = 0

  const stateOf = (id: ConversationId) =>
    Effect.suspend(() => {
      const state = conversations.get(id)
      return state === undefined ? Effect.fail(conversationNotFound(id)) : Effect.succeed(state)
    })

  const touch = (state: ConversationState, now: number) => {
    state.conversation = { ...state.conversation, updated_at: now }
    state.touched = ++touchCounter
  }

  const runsOf = (id: ConversationId) => [...runs.values()].filter((r) => r.conversationId === id)

  const { addUsage, dropSteering, ...ledger } = makeMemoryLedger((id) => conversations.has(id))

  /**
   * A commit in two parts: what may yield (ids, encodings), then `apply`, one synchronous step that
   * validates everything and then applies it all, so a failing commit leaves nothing behind.
   */
  const prepare = Effect.fnUntraced(function*(write: Write) {
    yield* rejectDeltaItems(write)
    const newItems = write.items ?? []
    const newChunks = write.chunks ?? []
    const now = yield* Clock.currentTimeMillis
    const ids = yield* Effect.forEach(newItems, () => newId("msg"))
    const bodies = newItems.map((i) => encodeEventText(i.item))
    const chunkBodies = newChunks.map((c) => encodeEventText(c))
    const apply = Effect.gen(function*() {
      const state = yield* stateOf(write.conversationId)
      const ownRun = (runId: string) => {
        const run = runs.get(runId)
        return run !== undefined && run.conversationId === write.conversationId ? run : undefined
      }
      const check = checkChunkSeqs(newChunks, (runId) => ownRun(runId)?.lastSeq)
      if (check._tag !== "Ok") return yield* chunkCheckError(check)
      const finish = write.finishRun
      if (finish !== undefined && ownRun(finish.runId) === undefined) return yield* runNotFound(finish.runId)
      const closed = (write.expectOpen ?? []).find((callId) => !state.open.some((c) => c.toolCallId === callId))
      if (closed !== undefined) return yield* callAnswered(write.conversationId, closed)

      // Everything is valid: apply it all in this one synchronous step.
      if (write.newSegment === true) {
        state.segment++
        state.open = []
      }
      const base = state.rows.length
      const rows = newItems.map((n, i): Row => ({
        id: MessageId.make(ids[i]!),
        position: base + i + 1,
        segment: state.segment,
        ...defaultFlags(n.item, n.contextOnly, n.traceOnly),
        type: n.item.type,
        body: bodies[i]!,
        createdAt: now
      }))
      state.open = advanceOpenCalls(state.open, rows.map((r, i) => ({ ...r, item: newItems[i]!.item })))
      for (const row of rows) {
        state.rows.push(row)
        items.set(row.id, { conversationId: write.conversationId, position: row.position })
      }
      newChunks.forEach((chunk, i) => {
        const list = chunks.get(chunk.run_id) ?? []
        list.push(chunkBodies[i]!)
        chunks.set(chunk.run_id, list)
      })
      for (const [runId, lastSeq] of check.lastSeqs) {
        runs.set(runId, { ...runs.get(runId)!, lastSeq, updatedAt: now })
      }
      if (finish !== undefined) {
        runs.set(finish.runId, { ...runs.get(finish.runId)!, status: finish.status, stopReason: finish.stopReason, updatedAt: now })
      }
      dropSteering(write.conversationId, write.takesSteering ?? [])
      addUsage(write.usage ?? [])
      if (records(write)) touch(state, now)
      return rows
    })
    return apply
  })

  return Store.of({
    ...ledger,

    createConversation: Effect.fn("Store.createConversation")(function*(input, options) {
      const parent = options?.parent
      const childOf = () =>
        parent === undefined ? undefined : [...conversations.values()].find((s) =>
          s.conversation.parent?.conversation_id === parent.conversation_id && s.conversation.parent.tool_call_id === parent.tool_call_id
        )
      const conversation = yield* makeConversation(input, options)
      // Looked up after the last yield, so two creations with one link never both insert.
      const existing = childOf()
      if (existing !== undefined) return existing.conversation
      conversations.set(conversation.id, { conversation, touched: ++touchCounter, segment: 1, rows: [], open: [] })
      return conversation
    }),

    getConversation: (id) => Effect.map(stateOf(id), (s) => s.conversation),

    listConversations: (options) => Effect.suspend(() => conversationsPage([...conversations.values()], options)),

    updateConversation: Effect.fn("Store.updateConversation")(function*(id, patch) {
      const state = yield* stateOf(id)
      const now = yield* Clock.currentTimeMillis
      state.conversation = {
        ...state.conversation,
        ...(patch.settings === undefined ? {} : { settings: patch.settings }),
        ...(patch.title === undefined ? {} : { title: patch.title })
      }
      touch(state, now)
      return state.conversation
    }),

    deleteConversation: Effect.fn("Store.deleteConversation")(function*(id) {
      const state = yield* stateOf(id)
      for (const row of state.rows) items.delete(row.id)
      for (const run of runsOf(id)) {
        runs.delete(run.id)
        chunks.delete(run.id)
        otids.delete(`${id}\u0000${run.otid}`)
      }
      conversations.delete(id)
    }),

    commit: Effect.fn("Store.commit")(function*(write) {
      const rows = yield* yield* prepare(write)
      return yield* storedAll(write.conversationId, rows)
    }),

    listItems: Effect.fn("Store.listItems")(function*(id, query) {
      const state = yield* stateOf(id)
      const limit = clampLimit(query?.limit, 100, 1000)
      const before = query?.before ?? Number.MAX_SAFE_INTEGER
      const window = state.rows.filter((r) => r.position < before && r.position > (query?.after ?? 0))
      const page = query?.after !== undefined ? window.slice(0, limit) : window.slice(-limit)
      return yield* storedAll(id, page)
    }),

    getItem: Effect.fn("Store.getItem")(function*(id) {
      const where = items.get(id)
      if (where === undefined) return yield* messageNotFound(id)
      const state = yield* stateOf(where.conversationId)
      return yield* toStored(where.conversationId, state.rows[where.position - 1]!)
    }),

    toolReturns: Effect.fn("Store.toolReturns")(function*(id, toolCallIds) {
      const state = yield* stateOf(id)
      const wanted = new Set<string>(toolCallIds)
      const returns = yield* storedAll(id, state.rows.filter((r) => r.type === "tool_return"))
      return returns.filter((s) => s.item.type === "tool_return" && wanted.has(s.item.tool_call_id))
    }),

    modelContext: Effect.fn("Store.modelContext")(function*(id) {
      const state = yield* stateOf(id)
      return yield* storedAll(id, state.rows.filter((r) => r.segment === state.segment && r.inContext))
    }),

    currentSegment: (id) => Effect.map(stateOf(id), (s) => s.segment),

    currentSegmentItems: Effect.fn("Store.currentSegmentItems")(function*(id) {
      const state = yield* stateOf(id)
      return { segment: state.segment, items: yield* storedAll(id, state.rows.filter((r) => r.segment === state.segment)) }
    }),

    segmentItems: Effect.fn("Store.segmentItems")(function*(id, segment) {
      const state = yield* stateOf(id)
      return yield* storedAll(id, state.rows.filter((r) => r.segment === segment))
    }),

    exportSegment: Effect.fn("Store.exportSegment")(function*(id, segment) {
      const state = yield* stateOf(id)
      return state.rows.filter((r) => r.segment === segment && r.inTrace).map((r) => `${r.body}\n`).join("")
    }),

    pendingApprovals: Effect.fn("Store.pendingApprovals")(function*(id) {
      const state = yield* stateOf(id)
      const calls = yield* storedAll(id, state.open.map((c) => state.rows[c.position - 1]!))
      return calls.flatMap((s): Array<ToolCall> => (s.item.type === "tool_call" ? [s.item] : []))
    }),

    backfill: Effect.fn("Store.backfill")(function*(id, options) {
      const state = yield* stateOf(id)
      const cap = options?.cap ?? DEFAULT_BACKFILL_CAP
      const tail: Array<Row> = []
      for (let i = state.rows.length - 1; i >= 0 && tail.length < cap; i--) {
        const row = state.rows[i]!
        if (row.inTrace && isMessageType(row.type)) tail.unshift(row)
      }
      const stored = yield* storedAll(id, tail)
      return backfillWindow(stored, { primary: options?.primary ?? DEFAULT_BACKFILL_PRIMARY, cap })
    }),

    createRun: Effect.fn("Store.createRun")(function*(id, otid: Otid, kind, options) {
      const run = yield* newRun(id, otid, kind, options?.owner)
      const input = options?.input?.(run)
      const record = input === undefined ? undefined : yield* prepare({ conversationId: id, ...input })
      // One synchronous step from here: the checks, the input's commit, the run.
      yield* stateOf(id)
      const existing = otids.get(`${id}\u0000${otid}`)
      if (existing !== undefined) return { run: runs.get(existing)!, created: false }
      const active = [...runs.values()].find((r) => r.conversationId === id && r.status === "running")
      if (active !== undefined) return yield* busyConflict(id, active)
      if (record !== undefined) yield* Effect.catchTag(record, "ChunkSeqError", Effect.die)
      runs.set(run.id, run)
      otids.set(`${id}\u0000${otid}`, run.id)
      return { run, created: true }
    }),

    getRun: (id) =>
      Effect.suspend(() => {
        const run = runs.get(id)
        return run === undefined ? Effect.fail(runNotFound(id)) : Effect.succeed(run)
      }),

    runByOtid: (id, otid) =>
      Effect.sync(() => Option.fromNullable(otids.get(`${id}\u0000${otid}`)).pipe(Option.map((r) => runs.get(r)!))),

    activeRun: (id) =>
      Effect.sync(() => Option.fromNullable(runsOf(id).filter((r) => r.status === "running").at(-1))),

    claimRun: (id, owner) =>
      Effect.sync(() => {
        const found = runs.get(id)
        if (found !== undefined && found.status === "running") runs.set(id, { ...found, owner })
      }),

    runningRuns: Effect.sync(() => [...runs.values()].filter((r) => r.status === "running")),

    readChunks: (runId, after) =>
      Stream.unwrap(Effect.suspend(() => {
        if (!runs.has(runId)) return Effect.fail(runNotFound(runId))
        return Effect.succeed(Stream.paginateChunkEffect(after, (cursor) => {
          const page = (chunks.get(runId) ?? []).slice(Math.max(0, cursor), Math.max(0, cursor) + pageSize)
          return Either.map(decodeChunks(page, undefined), (decoded) =>
            [Chunk.unsafeFromArray(decoded), page.length < pageSize ? Option.none() : Option.some(cursor + page.length)] as const)
        }))
      }))
  })
})
