import { Effect, FiberSet, Scope, Stream, SynchronizedRef } from "effect"
import type { Conversation } from "../../domain/Conversation.js"
import type { BackendError, ConfigError } from "../../domain/Errors.js"
import type { ConversationId } from "../../domain/Ids.js"
import { type SandboxInfo, sandboxInfo } from "../../domain/Sandbox.js"
import { Backend } from "../../services/Backend.js"
import { ToolExecutor } from "../../services/ToolExecutor.js"
import { DEFAULT_SYSTEM_PROMPT, open } from "../session/Session.js"
import { type Hosted, type HostOptions, make as makeHosted } from "./Hosted.js"

/*
 * programs/web/ is `baton web`: this host (the workspace's conversations, one Session each), Hosted
 * (one conversation: its tasks, the page's approver, the auth lock, what a page loads), TaskLog (what
 * a page replays and follows), WebServer (the HTTP routes, the SSE stream and the listener), Guard
 * (Host / Origin / token checks), Page (finds the page's files) and the page itself (page/: plain
 * HTML and one ES module, served from the package).
 */

export interface WebHost {
  readonly workspace: string
  /** Where Bash commands run (the page shows it in its header); absent: no sandbox configured. */
  readonly sandbox?: SandboxInfo
  /** The project instruction files (paths) a conversation created here gets, for the page's header. */
  readonly instructions: ReadonlyArray<string>
  /** This process's mark on log ids: an id from another process (a restarted host) is not resumed. */
  readonly epoch: string
  readonly list: Effect.Effect<ReadonlyArray<Conversation>, BackendError>
  readonly create: Effect.Effect<Conversation, BackendError>
  readonly get: (id: ConversationId) => Effect.Effect<Hosted, BackendError | ConfigError>
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
    ...(executor.sandbox !== undefined ? { sandbox: sandboxInfo(executor.sandbox) } : {}),
    instructions: options.instructions ?? [],
    epoch,
    list: Effect.map(backend.listConversations({ limit: 100 }), (page) =>
      page.items.filter((c) => c.settings.workspace === undefined || c.settings.workspace === executor.workspace)),
    create: Effect.flatMap(
      executor.definitions,
      (tools) => backend.createConversation({ system_prompt: DEFAULT_SYSTEM_PROMPT, ...options.settings, tools, workspace: executor.workspace })
    ),
    get
  }
  return webHost
})
