import { Deferred, Effect, FiberSet, Ref, Stream } from "effect"
import type { ConversationSettingsInput } from "../../domain/Conversation.js"
import { type BackendError, type ConfigError, InvalidInput } from "../../domain/Errors.js"
import { callDetails } from "../../domain/CallPreview.js"
import { encodeEventJson } from "../../domain/EventJson.js"
import type { ApprovalRequest, Decision, TaskEvent } from "../../domain/Events.js"
import type { StoredItem } from "../../domain/History.js"
import type { ConversationId } from "../../domain/Ids.js"
import type { SourcedRules } from "../../domain/Permissions.js"
import type { Pricing } from "../../domain/Usage.js"
import type { Backend } from "../../services/Backend.js"
import { readForPreview } from "../cli/view/ApprovalView.js"
import type { Approver } from "../session/ApprovalGate.js"
import type { Session } from "../session/Session.js"
import { type PageUsage, usageBase } from "./HostUsage.js"
import * as TaskLog from "./TaskLog.js"

export interface HostOptions {
  readonly rules: SourcedRules
  /** Settings of a conversation the page creates. */
  readonly settings: Omit<ConversationSettingsInput, "tools" | "workspace">
  readonly maxTurns?: number | undefined
  /** Names the credentials the model calls use, for the auth lock's message (never the secret itself). */
  readonly credentials: string
  /** Emits when the credentials may have changed (re-read): every auth lock opens. */
  readonly credentialsChanged?: Stream.Stream<void>
  /** The project instruction files a conversation the page creates gets in its system prompt (paths). */
  readonly instructions?: ReadonlyArray<string>
  /** Settings `pricing`: the page shows a cost when every model used has a price. */
  readonly pricing?: Pricing | undefined
  /** What the page's header panel shows about this host (each part optional). */
  readonly info?: HostInfo | undefined
}

/** The host as the page's header panel describes it; what the command does not know is left out. */
export interface HostInfo {
  readonly model?: string
  readonly mcp?: ReadonlyArray<{ readonly name: string; readonly state: string; readonly tools?: number }>
  /** The instruction files (AGENTS.md and the like) the model is given. */
  readonly instructions?: ReadonlyArray<string>
  readonly sandbox?: { readonly mode: string; readonly network: boolean; readonly active?: boolean; readonly unavailable?: string }
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
  /** The server's count less the running task's, which arrives with its events. */
  readonly usage: PageUsage
  /** Follow the log after this id: the running task's first entry, if one runs, is the next one. */
  readonly after: number
  readonly state: HostState
}

/** One conversation hosted here: its Session, its live log and what the page can ask of it. */
export interface Hosted {
  readonly conversationId: ConversationId
  readonly log: TaskLog.TaskLog
  readonly start: (prompt: string) => Effect.Effect<void, InvalidInput | BackendError>
  readonly steer: (text: string) => Effect.Effect<boolean>
  readonly interrupt: Effect.Effect<void>
  readonly skipReconnectWait: Effect.Effect<void, BackendError>
  /** The first answer wins; false when the call is not waiting (answered already, or gone). */
  readonly answer: (toolCallId: string, decision: Decision) => Effect.Effect<boolean>
  /** After an auth stop: opens the lock and re-runs the conversation as it stands (the prompt is not sent twice). */
  readonly retry: Effect.Effect<void, InvalidInput | BackendError>
  /** Opens the auth lock (the credentials changed). */
  readonly unlock: Effect.Effect<void>
  readonly snapshot: Effect.Effect<Snapshot, BackendError>
  /** The server's count for the conversation (what a page shows once no task runs). */
  readonly usage: Effect.Effect<PageUsage, BackendError>
  /** Whether a task runs and how many of its calls wait for an answer (the list's badges). */
  readonly status: Effect.Effect<{ readonly running: boolean; readonly waiting: number }>
  readonly backfill: Effect.Effect<ReadonlyArray<TaskEvent>, BackendError>
  /** One model call, stored as the conversation's title. */
  readonly generateTitle: Effect.Effect<string, BackendError>
}

const SNAPSHOT_ITEMS = 400

/** What happened, as the page shows it: the trace's items (never context-only carry-over). */
export const shown = (items: ReadonlyArray<StoredItem>) => items.filter((i) => i.inTrace).map((i) => i.item)

/** A task event as a log entry; a reconnect wait (or a client-side `wait`, once tasks emit one) is marked to count down. */
const event = (e: TaskEvent) => ({
  kind: "event" as const,
  data: encodeEventJson(e),
  wait: (e.type === "request_end" && e.status === "retrying" && e.retry_in_ms !== undefined) || e.type === "wait"
})

/** The auth stop in a batch of task events, if there is one. */
const authStop = (events: Iterable<TaskEvent>): string | undefined => {
  for (const e of events) if (e.type === "stop_reason" && e.reason === "auth") return e.error?.message ?? "the model refused the credentials"
  return undefined
}

interface Status extends HostState {
  /** Where the running task began: in the history (a page loads what came before) and in the log. */
  readonly began?: { readonly position: number; readonly after: number }
}

/** The page's approver: a call becomes an approval_request and waits for an answer, with or without a page open. */
const pageApprover = (log: TaskLog.TaskLog, waiting: Map<string, Deferred.Deferred<Decision>>, workspace: string): Approver => (request) =>
  Effect.gen(function*() {
    const answer = yield* Deferred.make<Decision>()
    // A subagent's call ids may repeat its parent's: the page answers it by its conversation too.
    const key = request.origin === undefined ? request.call.tool_call_id : `${request.origin.conversation_id}/${request.call.tool_call_id}`
    waiting.set(key, answer)
    const asked: ApprovalRequest = {
      type: "approval_request",
      tool_call_id: request.call.tool_call_id,
      name: request.call.name,
      arguments: request.call.arguments,
      grant: request.grant.text,
      ...(request.origin !== undefined ? { origin: request.origin } : {})
    }
    // What the terminal shows above its question (an Edit's diff against the file as it is now) goes with it.
    const preview = callDetails(request.call, yield* readForPreview(workspace, request))
    yield* log.append([{ ...event(asked), data: JSON.stringify({ ...(JSON.parse(encodeEventJson(asked)) as object), preview }) }])
    return yield* Deferred.await(answer).pipe(Effect.ensuring(Effect.sync(() => waiting.delete(key))))
  })

/**
 * Hosts one conversation: `openSession` is given the page's approver. A task runs in `tasks` (the
 * host's), not in a request: closing a tab neither stops it nor answers its questions.
 */
export const make = Effect.fn("Hosted.make")(function*(deps: {
  readonly id: ConversationId
  readonly workspace: string
  readonly backend: Backend["Type"]
  readonly options: HostOptions
  readonly tasks: FiberSet.FiberSet
  readonly openSession: (approver: Approver) => Effect.Effect<Session, BackendError | ConfigError>
}) {
  const { backend, id, options } = deps
  const log = yield* TaskLog.make()
  const state = yield* Ref.make<Status>({ running: false, lock: null })
  const publish = Effect.flatMap(Ref.get(state), (s) => log.append([{ kind: "state", data: JSON.stringify({ running: s.running, lock: s.lock }) }]))
  const waiting = new Map<string, Deferred.Deferred<Decision>>()
  const session = yield* deps.openSession(pageApprover(log, waiting, deps.workspace))

  const run = (prompt: string | undefined) =>
    Effect.gen(function*() {
      const last = yield* backend.history(id, { limit: 1 })
      const after = yield* log.trim
      yield* Ref.update(state, (s) => ({ ...s, began: { position: last.at(-1)?.position ?? 0, after } }))
      yield* publish
      let rejected: string | undefined
      const runOptions = options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}
      const task = (prompt === undefined ? session.retry(runOptions) : session.run(prompt, runOptions)).pipe(
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
      yield* FiberSet.run(deps.tasks, task)
    })

  /** A prompt's task, or without one the retry after an auth stop. */
  const start = Effect.fn("Hosted.start")(function*(prompt: string | undefined) {
    const refused = yield* Ref.modify(state, (s): [string | undefined, Status] =>
      s.running
        ? ["a task is already running in this conversation; steer it or stop it", s]
        : prompt === undefined && s.lock === null
        ? ["nothing to retry: the credentials were not refused", s]
        : prompt !== undefined && s.lock !== null
        ? [`the model refused ${s.lock.credentials}; update the credentials or press Retry`, s]
        : [undefined, { running: true, lock: null }])
    if (refused !== undefined) return yield* new InvalidInput({ message: refused })
    yield* run(prompt).pipe(Effect.onError(() => Effect.zipRight(Ref.update(state, (s) => ({ ...s, running: false })), publish)))
  })

  const hosted: Hosted = {
    conversationId: id,
    log,
    start: (prompt) => start(prompt),
    steer: session.steer,
    interrupt: session.interrupt,
    skipReconnectWait: session.skipReconnectWait,
    answer: Effect.fn("Hosted.answer")(function*(toolCallId: string, decision: Decision) {
      const waiter = waiting.get(toolCallId)
      return waiter === undefined ? false : yield* Deferred.succeed(waiter, decision)
    }),
    retry: start(undefined).pipe(Effect.withSpan("Hosted.retry")),
    unlock: Effect.zipRight(Ref.update(state, (s) => ({ ...s, lock: null })), publish),
    snapshot: Effect.gen(function*() {
      // The log's end first: an entry that lands after it is followed, never lost.
      const end = yield* log.last
      const s = yield* Ref.get(state)
      // A task claimed but not begun has nothing in the history or the log yet.
      const began = s.running ? s.began : undefined
      const items = yield* backend.history(id, began !== undefined ? { before: began.position + 1, limit: SNAPSHOT_ITEMS } : { limit: SNAPSHOT_ITEMS })
      const conversation = yield* backend.getConversation(id)
      return {
        conversation: { id: conversation.id, ...(conversation.title !== undefined ? { title: conversation.title } : {}) },
        items: shown(items),
        usage: yield* usageBase(backend, id, options.pricing, began?.position),
        after: began !== undefined ? Math.min(began.after, end) : end,
        state: { running: s.running, lock: s.lock }
      } satisfies Snapshot
    }).pipe(Effect.withSpan("Hosted.snapshot")),
    usage: usageBase(backend, id, options.pricing, undefined),
    status: Effect.map(Ref.get(state), (s) => ({ running: s.running, waiting: waiting.size })),
    backfill: Effect.map(session.backfill, shown),
    generateTitle: session.generateTitle
  }
  return hosted
})
