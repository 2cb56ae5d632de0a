import { Deferred, Effect, Either, Exit, Fiber, FiberHandle, FiberSet, Mailbox, Option, Ref, Stream } from "effect"
import * as Path from "node:path"
import type { ConversationSettingsInput } from "../../domain/Conversation.js"
import type { BackendError } from "../../domain/Errors.js"
import { InvalidInput } from "../../domain/Errors.js"
import type { ApprovalDecision, TaskEvent } from "../../domain/Events.js"
import { type ConversationId, Otid } from "../../domain/Ids.js"
import type { ImagePart, ToolCall, ToolReturn, UserMessage } from "../../domain/Messages.js"
import { parseRules, type SourcedRules } from "../../domain/Permissions.js"
import type { ThinkingLevel } from "../../domain/ProviderEvent.js"
import { skippableWait } from "../../domain/RecoverySchedule.js"
import { DEFAULT_MAX_TURNS, emptyRules } from "../../domain/Settings.js"
import type { Compactability } from "../../domain/Compaction.js"
import { Backend } from "../../services/Backend.js"
import { type Agents, subagentTypes } from "../../domain/Subagents.js"
import { makeFileView, ToolExecutor } from "../../services/ToolExecutor.js"
import { type Approver, type Gate, makeGate } from "./ApprovalGate.js"
import { interruptTask } from "./Interrupt.js"
import { syncFileView } from "./Resume.js"
import { offeringTask, runningTasks } from "./Subagent.js"
import { runTask, type TaskDeps } from "./Task.js"
import * as TaskProgress from "./TaskProgress.js"
import { toolSync } from "./ToolSync.js"
import type { ToolBatch } from "./ToolBatch.js"

/*
 * programs/session/ is the client side of Baton, the half that lives with the workspace: this
 * Session (one conversation driven from here, one task at a time); the task loop in Task.ts, which
 * is the approval loop (send a run, approve and run its tool calls as they arrive, send the results,
 * until the model answers without one), over the pure TaskProgress fold; ToolBatch (one turn's calls,
 * approved and executed eagerly); ApprovalGate (rules, session grants, the approver); Interrupt
 * (stopping a task at any moment and the carry-over it leaves); Resume (calls a dead process
 * left pending, and a run stream that broke off); and Subagent (the `Task` tool: child sessions on
 * the same executor, approvals through the parent's approver). It reaches the model and the store
 * only through the Backend port, so it works the same over a local or a remote backend.
 */

export type SessionError = BackendError

export interface SessionConfig {
  readonly conversationId?: ConversationId
  readonly rules?: SourcedRules
  readonly approver?: Approver
  /** Settings for a conversation this session creates (tools come from the workspace's executor). */
  readonly settings?: Omit<ConversationSettingsInput, "tools" | "workspace">
  readonly title?: string
  /** Subagent types from settings `agents` (the built-in `general-purpose` is always there). */
  readonly agents?: Agents
  /**
   * Set for a subagent's session: it decides with its parent's gate (the same rules and session
   * grants) and is not offered `Task` (one level).
   */
  readonly parent?: { readonly gate: Gate }
  /** false: the model is not offered `Task` (a replay of a recording made without it). Default true. */
  readonly subagents?: boolean
}

export interface RunOptions {
  readonly approver?: Approver
  readonly maxTurns?: number
  readonly thinking?: ThinkingLevel
  /** Images attached to the prompt (its last text). */
  readonly images?: ReadonlyArray<ImagePart>
}

/**
 * One conversation driven from a workspace: `run` streams a whole task (every run until the model
 * answers without a tool call), asking the approver and executing tools on the ToolExecutor.
 * It talks only to the Backend and the ToolExecutor, so it works the same over any backend.
 */
export interface Session {
  readonly conversationId: ConversationId
  readonly run: (prompt: string | ReadonlyArray<string>, options?: RunOptions) => Stream.Stream<TaskEvent, SessionError>
  /**
   * A task with no new input: re-runs the conversation as it stands, after a run that stopped `auth`
   * or `error` (the credentials fixed). The prompt is in the history already and is not sent again.
   */
  readonly retry: (options?: RunOptions) => Stream.Stream<TaskEvent, SessionError>
  /** Queues text for the running task; false when no task runs (here, or as the backend sees it). */
  readonly steer: (text: string) => Effect.Effect<boolean>
  /** Stops the running task now: tools interrupted, run cancelled, carry-over recorded for the next task. */
  readonly interrupt: Effect.Effect<void>
  readonly skipReconnectWait: Effect.Effect<void, SessionError>
  /** The last few messages, for a resumed screen. */
  readonly backfill: ReturnType<Backend["Type"]["backfill"]>
  readonly isRunning: Effect.Effect<boolean>
  /**
   * Calls a dead process left waiting for a result. A relaunched client shows them (their approval
   * question) at once with `run([])`, which resumes them and finishes the task.
   */
  readonly pendingApprovals: Effect.Effect<ReadonlyArray<ToolCall>, SessionError>
  /** Manual compaction (`/compact`): the conversation's one active job while it runs. */
  readonly compact: Stream.Stream<TaskEvent, SessionError>
  readonly compactability: Effect.Effect<Compactability, SessionError>
  /** A one-shot title for the conversation (not in its history). */
  readonly generateTitle: Effect.Effect<string, SessionError>
}

/** Events a task may get ahead of its reader by: many batches, a bounded amount of memory. */
const TASK_BUFFER = 8192

const newOtid = Effect.sync(() => Otid.make(crypto.randomUUID()))

/**
 * One result committed as its tool finished. A failure is not the task's: the result still goes with
 * the next input (the backend recognises a committed one by its otid). A call the backend no longer
 * holds open (its run failed, so it was never committed) is expected and not worth a warning.
 */
const commitResult = (backend: Backend["Type"], id: ConversationId, result: ToolReturn, decision: ApprovalDecision) =>
  backend.submitResult(id, result, { decision }).pipe(
    Effect.as(true),
    Effect.catchAll((error) =>
      Effect.as(
        error._tag === "InvalidToolCallIds"
          ? Effect.logDebug(`result of ${result.tool_call_id} not committed: ${error.message}`)
          : Effect.logWarning(`could not commit the result of ${result.tool_call_id} yet (it goes with the next input): ${error.message}`),
        false
      ))
  )

export const DEFAULT_SYSTEM_PROMPT = [
  "You are Baton, a careful coding agent working in the user's workspace.",
  "Use the tools to read, search and change files and to run commands; every call may need the user's approval.",
  "Read a file before you edit it. Prefer small, verifiable steps, and say plainly what you did and what is left."
].join("\n")

export const open = Effect.fn("Session.open")(function*(config: SessionConfig = {}) {
  const backend = yield* Backend
  const workspaceExecutor = yield* ToolExecutor
  const types = subagentTypes(config.agents)
  // What this session's model is offered: a parent's tools include Task, a child's never do.
  const delegates = config.parent === undefined && config.subagents !== false
  const executor = delegates ? offeringTask(workspaceExecutor, types) : workspaceExecutor
  const rules = yield* Either.match(parseRules(config.rules ?? emptyRules), { onLeft: Effect.fail, onRight: Effect.succeed })
  const workspace = executor.workspace
  // The executor resolves symlinks in these itself (its confinement rule), so plain paths suffice here.
  const allowedRoots = rules.additionalDirectories.map((dir) => Path.resolve(workspace, dir))
  const conversation = config.conversationId !== undefined
    ? yield* backend.getConversation(config.conversationId)
    : yield* backend.createConversation(
      { system_prompt: DEFAULT_SYSTEM_PROMPT, ...config.settings, tools: yield* executor.definitions, workspace },
      config.title !== undefined ? { title: config.title } : undefined
    )
  const syncTools = yield* toolSync(backend, executor, conversation)
  yield* syncTools
  // What this conversation's model saw of files: rebuilt from its history at each task's start, kept
  // up by the task's own events and by the tools as they run.
  const filesSeen = makeFileView()
  const filesReadTo = yield* Ref.make(0)
  const gate = config.parent?.gate ?? (yield* makeGate(rules, workspace, workspaceExecutor.sandbox))
  // One approval at a time for this session and its subagents: one person answers them all.
  const approvals = yield* Effect.makeSemaphore(1)
  const oneAtATime = (approver: Approver | undefined): Approver | undefined =>
    approver === undefined ? undefined : (request) => approvals.withPermits(1)(approver(request))
  // Whether a task takes steering now; the queue itself is the backend's (Backend.steer).
  const steering = yield* Ref.make(false)
  // A steer is checked and queued, and the queue closed and taken, one at a time: none falls between.
  const steerLock = yield* Effect.makeSemaphore(1)
  const steeringOf = (read: Effect.Effect<ReadonlyArray<UserMessage>, BackendError>) =>
    read.pipe(Effect.catchAll((error) =>
      Effect.as(Effect.logWarning(`could not read the steering held for ${conversation.id}: ${error.message}`), [] as ReadonlyArray<UserMessage>)))
  const heldSteering = steeringOf(backend.heldSteering(conversation.id))
  const takeSteering = steeringOf(backend.takeSteering(conversation.id))
  // The task's own waits (busy, a broken stream), cut short by skipReconnectWait like the backend's.
  const skip = yield* Ref.make(yield* Deferred.make<void>())
  // Cancels outlive the task that started them; closing the session waits for them, never drops them.
  const cancels = yield* FiberSet.make()
  yield* Effect.addFinalizer(() => FiberSet.awaitEmpty(cancels))
  // Made after `cancels`, so closing the session stops a running task before it waits for the cancels.
  const current = yield* FiberHandle.make<void, SessionError>()

  const start = (prompt: string | ReadonlyArray<string>, options: RunOptions | undefined, rerun: boolean): Stream.Stream<TaskEvent, SessionError> =>
    Stream.unwrapScoped(
      Effect.gen(function*() {
        // Bounded: a reader that stops reading holds the task back (the run itself goes on in the backend).
        const out = yield* Mailbox.make<TaskEvent, SessionError>({ capacity: TASK_BUFFER })
        const texts = typeof prompt === "string" ? [prompt] : prompt
        const images = options?.images ?? []
        const messages = yield* Effect.forEach(texts, (content, i) =>
          Effect.map(newOtid, (otid): UserMessage => ({
            type: "user_message",
            content,
            otid,
            ...(i === texts.length - 1 && images.length > 0 ? { images } : {})
          })))
        const approver = oneAtATime(options?.approver ?? config.approver)
        const maxTurns = options?.maxTurns ?? DEFAULT_MAX_TURNS
        const emit = (events: ReadonlyArray<TaskEvent>) =>
          Effect.zipRight(Effect.sync(() => filesSeen.observe(events)), Effect.asVoid(out.offerAll(events)))
        const deps: TaskDeps = {
          backend,
          syncTools,
          executor: !delegates ? executor : runningTasks(executor, {
            backend,
            executor: workspaceExecutor,
            conversationId: conversation.id,
            types,
            gate,
            approver,
            emit,
            maxTurns,
            thinking: options?.thinking,
            // The parent's rules too, for their additionalDirectories (its gate decides the calls).
            open: (childConfig, childExecutor) =>
              open({ ...childConfig, ...(config.rules !== undefined ? { rules: config.rules } : {}) }).pipe(
                Effect.provideService(ToolExecutor, childExecutor),
                Effect.provideService(Backend, backend)
              )
          }),
          gate,
          conversationId: conversation.id,
          approver,
          maxTurns,
          thinking: options?.thinking,
          executeOptions: { allowedRoots, files: filesSeen },
          emit,
          commit: (result, decision) => commitResult(backend, conversation.id, result, decision),
          otid: newOtid,
          wait: skippableWait(skip),
          progress: yield* Ref.make(TaskProgress.initial),
          batch: yield* Ref.make(Option.none<ToolBatch>()),
          drainOrClose: steerLock.withPermits(1)(Effect.gen(function*() {
            // Left held: the send that carries it takes it, so a crash before that send loses nothing.
            const held = yield* heldSteering
            if (held.length === 0) yield* Ref.set(steering, false)
            return held
          }))
        }
        const task = deps.emit(messages).pipe(
          Effect.zipRight(syncFileView(backend, conversation.id, filesSeen, filesReadTo)),
          Effect.zipRight(runTask(deps, messages, rerun ? yield* newOtid : undefined)),
          Effect.onInterrupt(() =>
            interruptTask(deps, (carryOver) =>
              FiberSet.run(cancels, backend.cancel(conversation.id, carryOver).pipe(
                Effect.catchAllCause((cause) => Effect.logWarning("could not record the interrupted task", cause))
              )))
          )
        )
        // With onlyIfMissing a running task is left alone and an interrupted fiber that never ran comes
        // back instead of ours; ours waits for `go` until it is known to be the one in `current`.
        const go = yield* Deferred.make<void>()
        const claim = FiberHandle.run(
          current,
          // The queue is dropped when the task exits: steering is for the task it was typed into.
          Deferred.await(go).pipe(
            Effect.zipRight(task),
            Effect.ensuring(steerLock.withPermits(1)(Effect.zipRight(Ref.set(steering, false), takeSteering)))
          ),
          { onlyIfMissing: true }
        )
        // Owned by this stream's scope before anything can interrupt us: a fiber left waiting would hold the session.
        const fiber = yield* Effect.uninterruptible(Effect.tap(claim, (fiber) => Effect.addFinalizer(() => Fiber.interrupt(fiber))))
        if (Option.getOrUndefined(yield* Effect.option(FiberHandle.get(current))) !== fiber) {
          return yield* new InvalidInput({ message: "a task is already running in this session; steer it or interrupt it" })
        }
        yield* Ref.set(steering, true)
        // The stream ends once the task has left `current`, so isRunning is already false for its reader.
        yield* Fiber.await(fiber).pipe(
          Effect.flatMap((exit) => (Exit.isFailure(exit) && !Exit.isInterrupted(exit) ? out.failCause(exit.cause) : out.end)),
          Effect.forkScoped
        )
        yield* Deferred.succeed(go, undefined)
        return Mailbox.toStream(out)
      })
    )

  const session: Session = {
    conversationId: conversation.id,
    run: (prompt, options) => start(prompt, options, false),
    retry: (options) => start([], options, true),
    steer: Effect.fn("Session.steer")(function*(text: string) {
      return yield* steerLock.withPermits(1)(Effect.gen(function*() {
        if (!(yield* Ref.get(steering))) return false
        return yield* backend.steer(conversation.id, text).pipe(
          Effect.as(true),
          // The backend saw no task (this one is only starting, or just ended): the caller prompts with the text.
          Effect.catchTag("NoTaskRunning", () => Effect.succeed(false)),
          Effect.catchAll((error) => Effect.as(Effect.logWarning(`could not steer: ${error.message}`), false))
        )
      }))
    }),
    interrupt: FiberHandle.clear(current),
    skipReconnectWait: Effect.zipRight(
      Effect.flatMap(Ref.get(skip), (signal) => Deferred.succeed(signal, undefined)),
      backend.skipReconnectWait(conversation.id)
    ),
    backfill: backend.backfill(conversation.id),
    isRunning: Effect.isSuccess(FiberHandle.get(current)),
    pendingApprovals: Effect.suspend(() => backend.pendingApprovals(conversation.id)),
    compact: backend.compact(conversation.id, "manual"),
    compactability: backend.compactability(conversation.id),
    generateTitle: backend.generateTitle(conversation.id)
  }
  return session
})
