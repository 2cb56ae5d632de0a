import { Deferred, Effect, FiberSet, Ref, Scope, Stream, SynchronizedRef } from "effect"
import type { Conversation, ConversationSettingsInput } from "../../domain/Conversation.js"
import { type BackendError, type ConfigError, InvalidInput } from "../../domain/Errors.js"
import { encodeEventJson } from "../../domain/EventJson.js"
import type { ApprovalRequest, Decision, TaskEvent } from "../../domain/Events.js"
import type { StoredItem } from "../../domain/History.js"
import type { ConversationId } from "../../domain/Ids.js"
import type { PermissionRules } from "../../domain/Settings.js"
import { Backend } from "../../services/Backend.js"
import { ToolExecutor } from "../../services/ToolExecutor.js"
import type { Approver } from "../session/ApprovalGate.js"
import { DEFAULT_SYSTEM_PROMPT, open } from "../session/Session.js"
import * as TaskLog from "./TaskLog.js"

/*
 * programs/web/ is `baton web`: this host (Sessions for one workspace, their tasks, the page's
 * approver and the auth lock), TaskLog (what a page replays and follows), WebServer (the HTTP
 * routes, the SSE stream and the listener), Guard (Host / Origin / token checks) and the page
 * itself (page/: plain HTML and one ES module, served from the package).
 */

export interface HostOptions {
  readonly rules: PermissionRules
  /** Settings of a conversation the page creates. */
  readonly settings: Omit<ConversationSettingsInput, "tools" | "workspace">
  readonly maxTurns?: number | undefined
  /** Names the credentials the model calls use, for the auth lock's message (never the secret itself). */
  readonly credentials: string
  /** Emits when the credentials may have changed (re-read): every auth lock opens. */
  readonly credentialsChanged?: Stream.Stream<void>
}

/** Why the page's Message box is locked: the model refused these credentials. */
export interface AuthLock {
  readonly credentials: string
  readonly message: string
}

export interface HostState {
  readonly running: boolean
  readonly lock: AuthLock | null
}

/** What a page loads before it follows the log: the history up to the running task, and where to follow from. */
export interface Snapshot {
  readonly conversation: { readonly id: ConversationId; readonly title?: string }
  readonly items: ReadonlyArray<TaskEvent>
  readonly usage: UsageTotals
  /** Follow the log after this id (the running task's first entry is the next one). */
  readonly after: number
  readonly epoch: string
  readonly state: HostState
}

export interface UsageTotals {
  readonly input_tokens: number
  readonly output_tokens: number
  readonly total_tokens: number
  readonly requests: number
}

/** One conversation hosted here: its Session, its live log and what the page can ask of it. */
export interface Hosted {
  readonly conversationId: ConversationId
  readonly log: TaskLog.TaskLog
  readonly start: (prompt: string) => Effect.Effect<void, InvalidInput | BackendError>
  readonly steer: (text: string) => Effect.Effect<boolean>
  readonly interrupt: Effect.Effect<void>
  readonly skipReconnectWait: Effect.Effect<void, BackendError>
  /** The first answer wins; false when the call is not waiting (already answered, or gone). */
  readonly answer: (toolCallId: string, decision: Decision) => Effect.Effect<boolean>
  /** After an auth stop: opens the lock and sends the rejected prompt again. */
  readonly retry: Effect.Effect<void, InvalidInput | BackendError>
  readonly snapshot: Effect.Effect<Snapshot, BackendError>
  readonly backfill: Effect.Effect<ReadonlyArray<TaskEvent>, BackendError>
}

export interface WebHost {
  readonly workspace: string
  readonly epoch: string
  readonly list: Effect.Effect<ReadonlyArray<Conversation>, BackendError>
  readonly create: Effect.Effect<Conversation, BackendError>
  readonly get: (id: ConversationId) => Effect.Effect<Hosted, BackendError | ConfigError>
}

const HISTORY_PAGE = 1000
const SNAPSHOT_ITEMS = 400

const sumUsage = (items: ReadonlyArray<StoredItem>, from: UsageTotals): UsageTotals =>
  items.reduce((acc, { item }) =>
    item.type === "token_usage"
      ? {
        input_tokens: acc.input_tokens + item.input_tokens,
        output_tokens: acc.output_tokens + item.output_tokens,
        total_tokens: acc.total_tokens + item.total_tokens,
        requests: acc.requests + 1
      }
      : acc, from)

const noUsage: UsageTotals = { input_tokens: 0, output_tokens: 0, total_tokens: 0, requests: 0 }

/** Every request's token_usage the conversation recorded before `before` (a position), page by page. */
const usageTotals = (backend: Backend["Type"], id: ConversationId, before: number | undefined) =>
  Effect.iterate({ after: 0, usage: noUsage, done: false }, {
    while: (s) => !s.done,
    body: (s) =>
      Effect.map(backend.history(id, { after: s.after, limit: HISTORY_PAGE, ...(before !== undefined ? { before } : {}) }), (items) => ({
        after: items.at(-1)?.position ?? s.after,
        usage: sumUsage(items, s.usage),
        done: items.length < HISTORY_PAGE
      }))
  }).pipe(Effect.map((s) => s.usage))

/** What happened, as the page shows it: the trace's items (never context-only carry-over). */
const shown = (items: ReadonlyArray<StoredItem>) => items.filter((i) => i.inTrace).map((i) => i.item)

const event = (e: TaskEvent): Omit<TaskLog.Entry, "id"> => ({ kind: "event", data: encodeEventJson(e) })

type Status = HostState & { readonly prompt?: string }

const stateEntry = (s: Status): Omit<TaskLog.Entry, "id"> => ({ kind: "state", data: JSON.stringify({ running: s.running, lock: s.lock }) })

/** The auth stop in a batch of task events, if there is one. */
const authStop = (events: Iterable<TaskEvent>): string | undefined => {
  for (const e of events) if (e.type === "stop_reason" && e.reason === "auth") return e.error?.message ?? "the model refused the credentials"
  return undefined
}

/**
 * The session host of `baton web`: one Session per conversation the page opens, over the usual
 * Backend and the workspace's one ToolExecutor (so its locks cover every task here). A task runs in
 * the host, not in a request: closing a tab neither stops it nor answers its approvals.
 */
export const make = Effect.fn("WebHost.make")(function*(options: HostOptions) {
  const backend = yield* Backend
  const executor = yield* ToolExecutor
  const context = yield* Effect.context<Backend | ToolExecutor>()
  const scope = yield* Effect.scope
  const tasks = yield* FiberSet.make()
  const epoch = crypto.randomUUID().slice(0, 8)
  const hosted = yield* SynchronizedRef.make(new Map<string, Hosted>())
  const statuses = new Set<{ readonly state: Ref.Ref<Status>; readonly publish: Effect.Effect<void> }>()

  const host = Effect.fn("WebHost.host")(function*(conversation: Conversation) {
    const id = conversation.id
    const log = yield* TaskLog.make()
    const state = yield* Ref.make<Status>({ running: false, lock: null })
    const publish = Effect.flatMap(Ref.get(state), (s) => log.append([stateEntry(s)]))
    statuses.add({ state, publish })
    const waiting = new Map<string, Deferred.Deferred<Decision>>()
    // The page's approver: the call becomes an approval_request and waits, with or without a page open.
    const approver: Approver = (request) =>
      Effect.gen(function*() {
        const answer = yield* Deferred.make<Decision>()
        const key = request.call.tool_call_id
        waiting.set(key, answer)
        const asked: ApprovalRequest = {
          type: "approval_request",
          tool_call_id: request.call.tool_call_id,
          name: request.call.name,
          arguments: request.call.arguments,
          grant: request.grant.text
        }
        yield* log.append([event(asked)])
        return yield* Deferred.await(answer).pipe(Effect.ensuring(Effect.sync(() => waiting.delete(key))))
      })
    const session = yield* open({ conversationId: id, rules: options.rules, approver }).pipe(Scope.extend(scope), Effect.provide(context))
    // Where the running task began: in the history (a page loads what came before) and in the log.
    const began = yield* Ref.make({ position: 0, after: 0 })

    const run = (prompt: string) =>
      Effect.gen(function*() {
        const last = yield* backend.history(id, { limit: 1 })
        const after = yield* log.trim
        yield* Ref.set(began, { position: last.at(-1)?.position ?? 0, after })
        yield* publish
        let rejected: string | undefined
        const task = session.run(prompt, options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}).pipe(
          Stream.runForEachChunk((events) => {
            rejected ??= authStop(events)
            return log.append(Array.from(events, event))
          }),
          Effect.catchAll((error) => log.append([{ kind: "state", data: JSON.stringify({ notice: error.message }) }])),
          Effect.ensuring(Effect.suspend(() =>
            Effect.zipRight(
              Ref.update(state, (s) => ({
                ...s,
                running: false,
                lock: rejected !== undefined ? { credentials: options.credentials, message: rejected } : s.lock
              })),
              publish
            )
          ))
        )
        yield* FiberSet.run(tasks, task)
      })

    const start = (prompt: string, retrying: boolean) =>
      Effect.gen(function*() {
        const refused = yield* Ref.modify(state, (s): [string | undefined, Status] =>
          s.running
            ? ["a task is already running in this conversation; steer it or stop it", s]
            : s.lock !== null && !retrying
            ? [`the model refused ${s.lock.credentials}; update the credentials or press Retry`, s]
            : [undefined, { running: true, lock: null, prompt }])
        if (refused !== undefined) return yield* new InvalidInput({ message: refused })
        yield* run(prompt).pipe(Effect.onError(() => Effect.zipRight(Ref.update(state, (s) => ({ ...s, running: false })), publish)))
      })

    const entry: Hosted = {
      conversationId: id,
      log,
      start: (prompt) => start(prompt, false),
      steer: session.steer,
      interrupt: session.interrupt,
      skipReconnectWait: session.skipReconnectWait,
      answer: (toolCallId, decision) =>
        Effect.suspend(() => {
          const waiter = waiting.get(toolCallId)
          return waiter === undefined ? Effect.succeed(false) : Deferred.succeed(waiter, decision)
        }),
      retry: Effect.gen(function*() {
        const s = yield* Ref.get(state)
        if (s.lock === null || s.prompt === undefined) return yield* new InvalidInput({ message: "nothing to retry: the credentials were not refused" })
        yield* start(s.prompt, true)
      }),
      snapshot: Effect.gen(function*() {
        // The log's end first: an entry that lands after it is followed, never lost.
        const end = yield* log.last
        const s = yield* Ref.get(state)
        const from = yield* Ref.get(began)
        const items = yield* backend.history(id, s.running ? { before: from.position + 1, limit: SNAPSHOT_ITEMS } : { limit: SNAPSHOT_ITEMS })
        const conversation = yield* backend.getConversation(id)
        return {
          conversation: { id: conversation.id, ...(conversation.title !== undefined ? { title: conversation.title } : {}) },
          items: shown(items),
          // The running task's usage arrives with its events.
          usage: yield* usageTotals(backend, id, s.running ? from.position + 1 : undefined),
          after: s.running ? Math.min(from.after, end) : end,
          epoch,
          state: { running: s.running, lock: s.lock }
        } satisfies Snapshot
      }),
      backfill: Effect.map(session.backfill, shown)
    }
    return entry
  })

  // A re-read of the credentials opens every lock: the next request proves whether they work now.
  if (options.credentialsChanged !== undefined) {
    yield* options.credentialsChanged.pipe(
      Stream.runForEach(() =>
        Effect.forEach(statuses, (s) => Effect.zipRight(Ref.update(s.state, (st) => ({ ...st, lock: null })), s.publish), { discard: true })),
      Effect.forkScoped
    )
  }

  const get = (id: ConversationId) =>
    SynchronizedRef.modifyEffect(hosted, (map) => {
      const known = map.get(id)
      if (known !== undefined) return Effect.succeed([known, map] as const)
      return Effect.map(Effect.flatMap(backend.getConversation(id), host), (h) => [h, new Map(map).set(id, h)] as const)
    })

  const webHost: WebHost = {
    workspace: executor.workspace,
    epoch,
    list: Effect.map(backend.listConversations({ limit: 100 }), (page) =>
      page.items.filter((c) => c.settings.workspace === undefined || c.settings.workspace === executor.workspace)),
    create: Effect.flatMap(
      Effect.map(executor.definitions, (tools) => ({ ...options.settings, tools, workspace: executor.workspace })),
      (settings) => backend.createConversation({ system_prompt: DEFAULT_SYSTEM_PROMPT, ...settings })
    ),
    get
  }
  return webHost
})
