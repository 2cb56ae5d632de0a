import { Effect, Layer, Stream } from "effect"
import type { StoreError } from "../../../src/domain/Errors.js"
import type { Chunk, TaskEvent } from "../../../src/domain/Events.js"
import { type ConversationId, Otid, type RunId, ToolCallId } from "../../../src/domain/Ids.js"
import type { ToolCall } from "../../../src/domain/Messages.js"
import { Store } from "../../../src/services/Store.js"

/** A fresh, empty store for each test. */
export type MakeStore = () => Layer.Layer<Store, StoreError>

export const user = (content: string): TaskEvent => ({ type: "user_message", content, otid: Otid.make(`o-${content.replace(/\s+/g, "_")}`) })
export const assistant = (content: string): TaskEvent => ({ type: "assistant_message", content })
export const reasoning = (content: string): TaskEvent => ({ type: "reasoning_message", content })
export const summary = (content: string): TaskEvent => ({ type: "summary_message", content })
export const call = (id: string): ToolCall => ({
  type: "tool_call",
  tool_call_id: ToolCallId.make(id),
  name: "Read",
  arguments: `{"file_path":"${id}.txt"}`
})
export const ret = (id: string): TaskEvent => ({
  type: "tool_return",
  tool_call_id: ToolCallId.make(id),
  status: "success",
  content: `contents of ${id}`,
  otid: Otid.make(`o-${id}`)
})
export const requestBegin: TaskEvent = { type: "request_begin", attempt: 0 }
export const decision = (id: string): TaskEvent => ({
  type: "approval_decision",
  tool_call_id: ToolCallId.make(id),
  decision: "allow",
  source: "rule"
})

export const chunk = (runId: RunId, seq: number, content = `c${seq}`): Chunk => ({
  type: "text_delta",
  content,
  run_id: runId,
  seq
})

/** Appends plain items, one commit. */
export const append = (id: ConversationId, ...items: ReadonlyArray<TaskEvent>) =>
  Effect.flatMap(Store, (store) => store.commit({ conversationId: id, items: items.map((item) => ({ item })) }))

export const newConversation = Effect.flatMap(Store, (store) => store.createConversation({}))

export const readAll = (runId: RunId, after = 0) =>
  Effect.flatMap(Store, (store) => Stream.runCollect(store.readChunks(runId, after))).pipe(
    Effect.map((c) => Array.from(c))
  )

/** What the store reports for one conversation, to compare before and after a failed write. */
export const snapshot = (id: ConversationId) =>
  Effect.gen(function*() {
    const store = yield* Store
    return {
      conversation: yield* store.getConversation(id),
      items: yield* store.listItems(id, { limit: 1000 }),
      segment: yield* store.currentSegment(id),
      pending: yield* store.pendingApprovals(id),
      runs: yield* store.runningRuns
    }
  })

export const contents = (items: ReadonlyArray<{ readonly item: TaskEvent }>) =>
  items.map(({ item }) =>
    item.type === "tool_call" || item.type === "tool_return"
      ? `${item.type}:${item.tool_call_id}`
      : "content" in item
      ? item.content
      : item.type
  )
