import { Effect, FiberSet, Scope, Stream, SynchronizedRef } from "effect"
import type { Conversation } from "../../domain/Conversation.js"
import type { BackendError, ConfigError } from "../../domain/Errors.js"
import type { TaskEvent } from "../../domain/Events.js"
import type { StoredItem } from "../../domain/History.js"
import type { ConversationId } from "../../domain/Ids.js"
import { sandboxInfo } from "../../domain/Sandbox.js"
import type { UsageReport } from "../../domain/Usage.js"
import { Backend } from "../../services/Backend.js"
import { ToolExecutor } from "../../services/ToolExecutor.js"
import { DEFAULT_SYSTEM_PROMPT, open } from "../session/Session.js"
import { type HostInfo, type Hosted, type HostOptions, make as makeHosted, shown } from "./Hosted.js"

/*
 * programs/web/ is `baton web`: this host (the workspace's conversations, one Session each), Hosted
 * (one conversation: its tasks, the page's approver, the auth lock, what a page loads), TaskLog (what
 * a page replays and follows), HostUsage (the token count a page starts from), WebApi (the page's
 * HttpApi), WebServer (its handlers, the event stream, the page's files and the listener, behind the
 * gate it shares with `baton serve`: server/Auth.ts), Page (finds the
 * page's built files) and the page itself (page/: HTML, CSS and ES modules, one concept each,
 * bundled into dist/page/ at build time).
 */

/** A conversation as the page lists it (its tool list and prompts stay on the host). */
export interface Listed {
  readonly id: ConversationId
  readonly title?: string
  /** Without a title: the first prompt's opening words. */
  readonly opening?: string
  readonly created_at: number
  readonly updated_at: number
  readonly forked_from?: ConversationId
  readonly running: boolean
  /** Calls waiting for an answer. */
  readonly waiting: number
}

const OPENING_CHARS = 60

const openingOf = (items: ReadonlyArray<StoredItem>): string | undefined => {
  const first = items.find((i) => i.item.type === "user_message")?.item
  if (first?.type !== "user_message") return undefined
  const text = first.content.replace(/\s+/g, " ").trim()
  return text.length > OPENING_CHARS ? `${text.slice(0, OPENING_CHARS - 1).replace(/\s\S*$/, "")}…` : text
}

/** A subagent as its parent's page shows it: under the Task call that started it. */
export interface Subagent {
  readonly id: ConversationId
  readonly tool_call_id: string
  readonly title?: string
  readonly items: ReadonlyArray<TaskEvent>
}

const SUBAGENT_ITEMS = 400

export interface WebHost {
  readonly workspace: string
  /** What the page's header panel shows: the workspace, what the command knows, whether usage is priced. */
  readonly info: HostInfo & { readonly workspace: string; readonly priced: boolean }
  /** This process's mark on log ids: an id from another process (a restarted host) is not resumed. */
  readonly epoch: string
  readonly list: Effect.Effect<ReadonlyArray<Listed>, BackendError>
  readonly create: Effect.Effect<Conversation, BackendError>
  readonly get: (id: ConversationId) => Effect.Effect<Hosted, BackendError | ConfigError>
  /** A conversation's subagents with what they did, for the page to nest under their Task calls. */
  readonly subagents: (parent: ConversationId) => Effect.Effect<ReadonlyArray<Subagent>, BackendError>
  /** What `GET /v1/usage` reports: one conversation's, or every conversation's. */
  readonly usage: (conversation: ConversationId | undefined) => Effect.Effect<UsageReport, BackendError>
}

/**
 * The session host of `baton web`: one Session per conversation a page opens, over the usual Backend
 * and the workspace's one ToolExecutor, so its locks cover every task here. Sessions and tasks live
 * in the host's scope: closing it (Ctrl-C) interrupts running tasks, which record their carry-over.
 */
export const make = Effect.fn("WebHost.make")(function*(options: HostOptions) {
  const backend = yield* Backend
  const executor = yield* ToolExecutor
  const context = yield* Effect.context<Backend | ToolExecutor>()
  const scope = yield* Effect.scope
  const tasks = yield* FiberSet.make()
  const epoch = crypto.randomUUID().slice(0, 8)
  const hosted = yield* SynchronizedRef.make(new Map<string, Hosted>())

  const get = (id: ConversationId) =>
    SynchronizedRef.modifyEffect(hosted, (map) => {
      const known = map.get(id)
      if (known !== undefined) return Effect.succeed([known, map] as const)
      return Effect.gen(function*() {
        yield* backend.getConversation(id)
        const entry = yield* makeHosted({
          id,
          workspace: executor.workspace,
          backend,
          options,
          tasks,
          openSession: (approver) =>
            open({ conversationId: id, rules: options.rules, approver }).pipe(Scope.extend(scope), Effect.provide(context))
        })
        return [entry, new Map(map).set(id, entry)] as const
      })
    })

  // A re-read of the credentials opens every lock: the next request proves whether they work now.
  if (options.credentialsChanged !== undefined) {
    yield* options.credentialsChanged.pipe(
      Stream.runForEach(() => Effect.flatMap(SynchronizedRef.get(hosted), (map) => Effect.forEach(map.values(), (h) => h.unlock, { discard: true }))),
      Effect.forkScoped
    )
  }

  const webHost: WebHost = {
    workspace: executor.workspace,
    info: {
      ...options.info,
      workspace: executor.workspace,
      priced: options.pricing !== undefined,
      instructions: options.instructions ?? [],
      ...(executor.sandbox !== undefined ? { sandbox: sandboxInfo(executor.sandbox) } : {})
    },
    epoch,
    // Subagents are not listed: the page shows them under their parent's Task call.
    list: Effect.gen(function*() {
      const page = yield* backend.listConversations({ limit: 100, roots: true })
      const open = yield* SynchronizedRef.get(hosted)
      const mine = page.items.filter((c) => c.settings.workspace === undefined || c.settings.workspace === executor.workspace)
      return yield* Effect.forEach(mine, (c) =>
        Effect.gen(function*() {
          const status = open.get(c.id)?.status
          const { running, waiting } = status !== undefined ? yield* status : { running: false, waiting: 0 }
          const opening = c.title === undefined ? openingOf(yield* backend.history(c.id, { after: 0, limit: 4 })) : undefined
          return {
            id: c.id,
            ...(c.title !== undefined ? { title: c.title } : {}),
            ...(opening !== undefined ? { opening } : {}),
            created_at: c.created_at,
            updated_at: c.updated_at,
            ...(c.forked_from !== undefined ? { forked_from: c.forked_from.conversation_id } : {}),
            running,
            waiting
          } satisfies Listed
        }), { concurrency: 4 })
    }),
    create: Effect.flatMap(
      executor.definitions,
      (tools) => backend.createConversation({ system_prompt: DEFAULT_SYSTEM_PROMPT, ...options.settings, tools, workspace: executor.workspace })
    ),
    get,
    subagents: (parent) =>
      Effect.flatMap(backend.listConversations({ parent, limit: 100 }), (page) =>
        Effect.forEach(page.items, (c) =>
          Effect.map(backend.history(c.id, { limit: SUBAGENT_ITEMS }), (items): Subagent => ({
            id: c.id,
            tool_call_id: c.parent?.tool_call_id ?? "",
            ...(c.title !== undefined ? { title: c.title } : {}),
            items: shown(items)
          })), { concurrency: 4 })),
    usage: (conversation) =>
      backend.usage({
        ...(conversation !== undefined ? { conversationId: conversation } : {}),
        ...(options.pricing !== undefined ? { pricing: options.pricing } : {})
      })
  }
  return webHost
})
