import { Option } from "effect"
import type { TaskEvent, TaskEventType } from "./Events.js"
import type { Message, ToolCall } from "./Messages.js"

/**
 * The pure rules of a conversation's item log, shared by every Store layer so that they agree by
 * construction: which flags a new item gets, which tool calls are still open, what a resume shows,
 * whether a batch of chunks continues its runs, and the conversation list cursor.
 */

const messageTypes: ReadonlySet<TaskEventType> = new Set([
  "user_message",
  "assistant_message",
  "reasoning_message",
  "tool_call",
  "tool_return",
  "summary_message"
])

const primaryTypes: ReadonlySet<TaskEventType> = new Set([
  "user_message",
  "assistant_message",
  "reasoning_message",
  "summary_message"
])

/** Messages are kept in history; everything else a store accepts is an event (trace only). */
export const isMessageType = (type: TaskEventType): boolean => messageTypes.has(type)

/** A stored item that can go to the model (as opposed to an event). */
export const isMessage = (item: TaskEvent): item is Message => messageTypes.has(item.type)

/** What a backfill counts towards its `primary` budget (tool traffic rides along between them). */
export const isPrimaryType = (type: TaskEventType): boolean => primaryTypes.has(type)

export interface ItemFlags {
  readonly inContext: boolean
  readonly inTrace: boolean
}

/**
 * Messages go to the model and the trace; `summary_message` is display-only (compaction adds the
 * model-facing `[context_summary]` text separately, as `contextOnly`); events are trace-only;
 * `contextOnly` items (carry-over) reach the model and never the trace; `traceOnly` items (output
 * of a request that did not complete) were shown but never reach the model.
 */
export const defaultFlags = (item: TaskEvent, contextOnly: boolean | undefined, traceOnly?: boolean): ItemFlags => {
  if (contextOnly === true) return { inContext: true, inTrace: false }
  if (traceOnly === true) return { inContext: false, inTrace: true }
  if (item.type === "summary_message") return { inContext: false, inTrace: true }
  return { inContext: isMessageType(item.type), inTrace: true }
}

/** A tool call of the current context still waiting for its tool_return. */
export interface OpenCall {
  readonly position: number
  readonly toolCallId: string
}

export interface LoggedItem {
  readonly position: number
  readonly inContext: boolean
  readonly item: TaskEvent
}

/**
 * Advances the open calls over newly appended items (in position order). Only in-context items
 * count; a tool_return closes every earlier open call with its tool_call_id. Starting from `[]`
 * over a whole segment's items gives the reference answer for pending approvals.
 */
export const advanceOpenCalls = (
  open: ReadonlyArray<OpenCall>,
  items: ReadonlyArray<LoggedItem>
): ReadonlyArray<OpenCall> => {
  let current = open
  for (const { inContext, item, position } of items) {
    if (!inContext) continue
    if (item.type === "tool_call") {
      current = [...current, { position, toolCallId: item.tool_call_id }]
    } else if (item.type === "tool_return") {
      const id = item.tool_call_id
      if (current.some((c) => c.toolCallId === id)) current = current.filter((c) => c.toolCallId !== id)
    }
  }
  return current
}

/** The reference definition of pending approvals, over a segment's in-context items in order. */
export const pendingCalls = (items: ReadonlyArray<LoggedItem>): ReadonlyArray<ToolCall> => {
  const open = new Set(advanceOpenCalls([], items).map((c) => c.position))
  const calls: Array<ToolCall> = []
  for (const { item, position } of items) {
    if (item.type === "tool_call" && open.has(position)) calls.push(item)
  }
  return calls
}

export const DEFAULT_BACKFILL_PRIMARY = 10
export const DEFAULT_BACKFILL_CAP = 40

/**
 * The resume window. `tail` is the conversation's last `cap` renderable items (trace messages), in
 * chronological order. Walks back until `primary` user/assistant/reasoning/summary messages are
 * taken, keeping the tool traffic between them, then drops leading tool_returns whose call was cut.
 */
export const backfillWindow = <A extends { readonly item: TaskEvent }>(
  tail: ReadonlyArray<A>,
  options: { readonly primary: number; readonly cap: number }
): ReadonlyArray<A> => {
  const cap = Math.max(0, options.cap)
  let start = tail.length
  let primary = 0
  while (start > 0 && tail.length - start < cap && primary < options.primary) {
    start--
    if (isPrimaryType(tail[start]!.item.type)) primary++
  }
  while (start < tail.length && tail[start]!.item.type === "tool_return") start++
  return tail.slice(start)
}

/** Why a batch of chunks cannot be appended. */
export type ChunkCheckFailure =
  | { readonly _tag: "UnknownRun"; readonly runId: string }
  | { readonly _tag: "SeqGap"; readonly runId: string; readonly expected: number; readonly got: number }

/**
 * Chunks must continue their run's seq exactly: the first is lastSeq + 1, then +1 each. Returns the
 * new lastSeq of every run touched, or the first violation. `lastSeq` answers undefined for a run
 * that does not exist (in this conversation).
 */
export const checkChunkSeqs = (
  chunks: ReadonlyArray<{ readonly run_id: string; readonly seq: number }>,
  lastSeq: (runId: string) => number | undefined
): { readonly _tag: "Ok"; readonly lastSeqs: ReadonlyMap<string, number> } | ChunkCheckFailure => {
  const next = new Map<string, number>()
  for (const chunk of chunks) {
    const last = next.get(chunk.run_id) ?? lastSeq(chunk.run_id)
    if (last === undefined) return { _tag: "UnknownRun", runId: chunk.run_id }
    if (chunk.seq !== last + 1) return { _tag: "SeqGap", runId: chunk.run_id, expected: last + 1, got: chunk.seq }
    next.set(chunk.run_id, chunk.seq)
  }
  return { _tag: "Ok", lastSeqs: next }
}

/** Where a conversation sits in the newest-first list: by updated_at, ties by last touch. */
export interface RecencyKey {
  readonly updatedAt: number
  readonly touched: number
}

export const compareRecencyDesc = (a: RecencyKey, b: RecencyKey): number =>
  b.updatedAt - a.updatedAt || b.touched - a.touched

export const isOlder = (a: RecencyKey, than: RecencyKey): boolean => compareRecencyDesc(than, a) < 0

const cursorPattern = /^c1\.(-?[0-9a-z]+)\.([0-9a-z]+)$/

/** Opaque to callers; only its own layer family reads it. */
export const encodeCursor = (key: RecencyKey): string =>
  `c1.${key.updatedAt.toString(36)}.${key.touched.toString(36)}`

export const decodeCursor = (cursor: string): Option.Option<RecencyKey> => {
  const m = cursorPattern.exec(cursor)
  if (m === null) return Option.none()
  const updatedAt = parseInt(m[1]!, 36)
  const touched = parseInt(m[2]!, 36)
  return Number.isSafeInteger(updatedAt) && Number.isSafeInteger(touched)
    ? Option.some({ updatedAt, touched })
    : Option.none()
}

/** A page size the caller asked for, kept within [1, max]. */
export const clampLimit = (limit: number | undefined, fallback: number, max: number): number =>
  limit === undefined || !Number.isFinite(limit) ? fallback : Math.min(max, Math.max(1, Math.floor(limit)))
