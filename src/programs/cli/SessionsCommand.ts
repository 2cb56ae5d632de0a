import * as Effect from "effect/Effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Conversation } from "../../domain/Conversation.js"
import { ConfigError } from "../../domain/Errors.js"
import type { TaskEvent } from "../../domain/Events.js"
import type { StoredItem } from "../../domain/History.js"
import type { ConversationId } from "../../domain/Ids.js"
import { Backend } from "../../services/Backend.js"
import { initialView, type ViewState, viewEvent } from "./view/EventView.js"
import type { Io } from "./Io.js"
import { colorFor, makeStyle, type Style } from "./view/Style.js"
import { eventLine } from "./view/TaskOutput.js"

/** `baton sessions list|show|export|fork`: reading conversations (fork makes a new one, never changes its source). */

const when = (ms: number): string => {
  const d = new Date(ms)
  const pad = (n: number) => String(n).padStart(2, "0")
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`
}

const firstPrompt = (backend: Backend["Type"], id: ConversationId) =>
  Effect.map(backend.history(id, { after: 0, limit: 20 }), (items) =>
    items.find((s) => s.inTrace && s.item.type === "user_message")?.item)

const excerpt = (text: string, max: number) => {
  const line = text.replace(/\s+/g, " ").trim()
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

const summary = (c: Conversation) => ({
  id: c.id,
  ...(c.title !== undefined ? { title: c.title } : {}),
  created_at: c.created_at,
  updated_at: c.updated_at,
  ...(c.settings.workspace !== undefined ? { workspace: c.settings.workspace } : {}),
  ...(c.settings.model !== undefined ? { model: c.settings.model } : {}),
  ...(c.parent !== undefined ? { parent: c.parent } : {}),
  ...(c.forked_from !== undefined ? { forked_from: c.forked_from } : {})
})

/** Subagents of a conversation (one per Task call), newest first. */
const childrenOf = (backend: Backend["Type"], id: ConversationId) =>
  Effect.map(backend.listConversations({ parent: id, limit: 500 }), (page) => page.items)

const lineage = (c: Conversation, style: Style): string =>
  c.parent !== undefined
    ? style.dim(`  (subagent of ${c.parent.conversation_id}, ${c.parent.tool_call_id})`)
    : c.forked_from !== undefined
    ? style.dim(`  (fork of ${c.forked_from.conversation_id} at ${c.forked_from.at})`)
    : ""

/**
 * Newest first. Subagents are listed under their parent (indented), or — with `--all` — as
 * conversations of their own, in recency order, each saying whose it is.
 */
export const listSessions = Effect.fn("Cli.sessionsList")(function*(
  io: Io,
  options: { readonly json: boolean; readonly limit: number; readonly all?: boolean }
) {
  const backend = yield* Backend
  const page = yield* backend.listConversations({ limit: options.limit, ...(options.all === true ? {} : { roots: true }) })
  const rows: Array<{ readonly c: Conversation; readonly depth: number }> = []
  for (const c of page.items) {
    rows.push({ c, depth: 0 })
    if (options.all !== true) for (const child of yield* childrenOf(backend, c.id)) rows.push({ c: child, depth: 1 })
  }
  if (options.json) {
    for (const { c } of rows) io.out(`${JSON.stringify(summary(c))}\n`)
    return
  }
  const style = makeStyle(colorFor({ isTTY: io.stdoutTTY }, io.env))
  if (rows.length === 0) {
    io.out(`no conversations yet\n`)
    return
  }
  for (const { c, depth } of rows) {
    const prompt = c.title === undefined ? yield* firstPrompt(backend, c.id) : undefined
    const label = c.title ?? (prompt !== undefined && prompt.type === "user_message" ? style.dim(excerpt(prompt.content, 60)) : style.dim("(empty)"))
    const where = depth === 0 && c.settings.workspace !== undefined ? style.dim(`  ${c.settings.workspace}`) : ""
    const extra = depth === 0 ? lineage(c, style) : style.dim(`  (Task ${c.parent?.tool_call_id ?? "?"})`)
    io.out(`${depth === 0 ? "" : "  ↳ "}${style.bold(c.id)}  ${when(c.updated_at)}  ${label}${where}${extra}\n`)
  }
  if (page.next !== undefined) io.out(style.dim(`(showing the ${options.limit} most recent; --limit N shows more)\n`))
})

/** Every recorded item, oldest first, paging through the history. */
export const allItems = (id: ConversationId) =>
  Effect.gen(function*() {
    const backend = yield* Backend
    const items: Array<StoredItem> = []
    for (;;) {
      const page = yield* backend.history(id, { after: items.at(-1)?.position ?? 0, limit: 1000 })
      items.push(...page)
      if (page.length < 1000) return items
    }
  })

/** History holds whole messages; the live view draws text from deltas, so give it one per message. */
const asStream = (item: TaskEvent): ReadonlyArray<TaskEvent> =>
  item.type === "assistant_message"
    ? [{ type: "text_delta", content: item.content }, item]
    : item.type === "reasoning_message"
    ? [{ type: "reasoning_delta", content: item.content }, item]
    : [item]

export const renderHistory = (items: ReadonlyArray<StoredItem>, style: Style, write: (text: string) => void) => {
  let state: ViewState = initialView
  for (const stored of items.filter((s) => s.inTrace)) {
    for (const event of asStream(stored.item)) {
      const [next, pieces] = viewEvent(state, event, { style, userDecisions: true, reasoning: true, prompts: true })
      state = next
      for (const piece of pieces) write(piece.sink === "reasoning" ? style.dim(piece.text) : piece.text)
    }
  }
}

/**
 * The history. `--json`: one recorded event per line with its `position` (what `sessions fork --at`
 * takes), a Task call with its subagent's conversation as `child_conversation_id`.
 */
export const showSession = Effect.fn("Cli.sessionsShow")(function*(io: Io, id: ConversationId, options: { readonly json: boolean }) {
  const backend = yield* Backend
  const conversation = yield* backend.getConversation(id)
  const items = yield* allItems(id)
  const children = new Map((yield* childrenOf(backend, id)).flatMap((c) => (c.parent !== undefined ? [[String(c.parent.tool_call_id), c] as const] : [])))
  if (options.json) {
    for (const s of items.filter((s) => s.inTrace)) {
      const child = s.item.type === "tool_call" ? children.get(s.item.tool_call_id) : undefined
      const line = eventLine(s.item).trimEnd()
      io.out(`${line.slice(0, -1)},"position":${s.position}${child !== undefined ? `,"child_conversation_id":${JSON.stringify(child.id)}` : ""}}\n`)
    }
    return
  }
  const style = makeStyle(colorFor({ isTTY: io.stdoutTTY }, io.env))
  io.out(`${style.bold(`conversation ${conversation.id}`)}${conversation.title !== undefined ? ` — ${conversation.title}` : ""}\n`)
  io.out(style.dim(`created ${when(conversation.created_at)} · updated ${when(conversation.updated_at)}${conversation.settings.workspace !== undefined ? ` · ${conversation.settings.workspace}` : ""}${lineage(conversation, style)}\n\n`))
  renderHistory(items, style, io.out)
  if (children.size > 0) {
    io.out(`\n${style.bold("subagents")}\n`)
    for (const s of items) {
      const child = s.item.type === "tool_call" ? children.get(s.item.tool_call_id) : undefined
      if (child !== undefined && s.item.type === "tool_call") {
        io.out(`  Task ${s.item.tool_call_id} «${child.title ?? ""}» → ${style.bold(child.id)}  ${style.dim(`(baton sessions show ${child.id})`)}\n`)
      }
    }
  }
})

/** `baton sessions fork ID [--at N]`: a new conversation from the source's context up to N; prints its id. */
export const forkSession = Effect.fn("Cli.sessionsFork")(function*(io: Io, id: ConversationId, options: { readonly at: number | undefined; readonly json: boolean }) {
  const backend = yield* Backend
  const fork = yield* backend.fork(id, options.at !== undefined ? { at: options.at } : {})
  io.out(options.json ? `${JSON.stringify(summary(fork))}\n` : `${fork.id}\n`)
})

/**
 * Writes every trace segment (`trace_001.jsonl`, …): one per model context, a new one after each
 * compaction. The newest recorded item carries the current segment number.
 */
export const exportSession = Effect.fn("Cli.sessionsExport")(function*(io: Io, id: ConversationId, options: { readonly out: string | undefined }) {
  const backend = yield* Backend
  yield* backend.getConversation(id)
  const newest = yield* backend.history(id, { limit: 1 })
  const segments = newest.at(-1)?.segment ?? 1
  const dir = Path.resolve(options.out ?? `baton-trace-${id}`)
  yield* Effect.try({
    try: () => Fs.mkdirSync(dir, { recursive: true }),
    catch: (cause) => new ConfigError({ source: "--out", field: "out", message: `cannot create ${dir}: ${String(cause)}` })
  })
  for (let segment = 1; segment <= segments; segment++) {
    const text = yield* backend.exportTrace(id, segment)
    const file = Path.join(dir, `trace_${String(segment).padStart(3, "0")}.jsonl`)
    yield* Effect.try({
      try: () => Fs.writeFileSync(file, text),
      catch: (cause) => new ConfigError({ source: "--out", field: "out", message: `cannot write ${file}: ${String(cause)}` })
    })
    io.out(`${file}  (${text === "" ? 0 : text.split("\n").length - 1} items)\n`)
  }
})
