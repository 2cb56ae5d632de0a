import { Chunk, Clock, Effect, Either, type Scope, Stream } from "effect"
import type { ToolDefinition } from "../../domain/Conversation.js"
import type { StopReasonValue, TaskEvent } from "../../domain/Events.js"
import type { ConfigError } from "../../domain/Errors.js"
import type { ConversationId } from "../../domain/Ids.js"
import type { Origin, ToolCall } from "../../domain/Messages.js"
import type { ThinkingLevel } from "../../domain/ProviderEvent.js"
import {
  type AgentDefinition,
  type Agents,
  offersTool,
  parseTaskCall,
  TASK_TOOL,
  type TaskArgs,
  taskDefinition
} from "../../domain/Subagents.js"
import type { ToolResult } from "../../domain/Tools.js"
import type { Backend } from "../../services/Backend.js"
import type { ToolExecutor } from "../../services/ToolExecutor.js"
import type { Approver, Gate } from "./ApprovalGate.js"
import type { Session, SessionConfig, SessionError } from "./Session.js"

/**
 * Subagents: the `Task` tool runs a child conversation on the same Backend with a child Session on
 * the same ToolExecutor, so the workspace's locks cover parent and children alike. The Task call
 * holds no lock itself (it never reaches the executor's locks); only its child's tools do. The
 * child's approvals go to the parent's approver with the origin attached, its gate is the parent's
 * (rules and session grants), and every child event reaches the parent's task stream tagged with
 * `origin`. The child conversation is made idempotently by its parent link, so a parent resumed
 * after a crash re-attaches to the child it had instead of starting a second one.
 */

/** What a parent task lends its children. */
export interface SubagentHost {
  readonly backend: Backend["Type"]
  /** The workspace's own executor (children get it restricted to their tools, never with Task). */
  readonly executor: ToolExecutor["Type"]
  readonly conversationId: ConversationId
  readonly types: Agents
  readonly gate: Gate
  /** The parent's approver, already taking one request at a time for parent and children alike. */
  readonly approver: Approver | undefined
  readonly emit: (events: ReadonlyArray<TaskEvent>) => Effect.Effect<void>
  readonly maxTurns: number
  readonly thinking: ThinkingLevel | undefined
  /** Opens a child Session (Session.open, passed in so this module does not import its own caller). */
  readonly open: (config: SessionConfig, executor: ToolExecutor["Type"]) => Effect.Effect<Session, SessionError | ConfigError, Scope.Scope>
}

/** Sent to a re-attached child whose last task neither answered nor left calls pending. */
export const CONTINUE_TEXT = "The session was interrupted by a crash. Continue the task from where you stopped, then give your final report."

/** Definitions derived from the executor's, recomputed only when its array changes (the sessions compare by identity). */
const derived = (
  source: Effect.Effect<ReadonlyArray<ToolDefinition>>,
  f: (definitions: ReadonlyArray<ToolDefinition>) => ReadonlyArray<ToolDefinition>
): Effect.Effect<ReadonlyArray<ToolDefinition>> => {
  let last: { readonly input: ReadonlyArray<ToolDefinition>; readonly output: ReadonlyArray<ToolDefinition> } | undefined
  return Effect.map(source, (input) => {
    if (last?.input !== input) last = { input, output: f(input) }
    return last.output
  })
}

const errorResult = (call: ToolCall, output: string, durationMs: number): ToolResult => ({
  tool_call_id: call.tool_call_id,
  status: "error",
  output,
  duration_ms: durationMs
})

/** A parent's executor as its model sees it: the workspace's tools plus `Task`. */
export const offeringTask = (executor: ToolExecutor["Type"], types: Agents): ToolExecutor["Type"] => {
  const task = taskDefinition(types)
  return {
    ...executor,
    definitions: derived(executor.definitions, (definitions) => [...definitions.filter((d) => d.name !== TASK_TOOL), task])
  }
}

/** A child's executor: the workspace's, offering only its type's tools and never `Task`. */
const restricted = (executor: ToolExecutor["Type"], agent: AgentDefinition): ToolExecutor["Type"] => {
  const offered = (name: string) => offersTool(agent, name)
  return {
    workspace: executor.workspace,
    ...(executor.sandbox !== undefined ? { sandbox: executor.sandbox } : {}),
    definitions: derived(executor.definitions, (definitions) => definitions.filter((d) => offered(d.name))),
    start: (call, options) =>
      offered(call.name)
        ? executor.start(call, options)
        : Effect.forkScoped(Effect.succeed(errorResult(
          call,
          call.name === TASK_TOOL
            ? "a subagent cannot start subagents: Task is not available here"
            : `${call.name} is not one of this subagent's tools (${(agent.tools ?? []).join(", ")})`,
          0
        )))
  }
}

/** What a re-attached child needs: its answer, if it gave one, or what to run. */
const resumePoint = Effect.fn("Subagent.resumePoint")(function*(backend: Backend["Type"], id: ConversationId, prompt: string) {
  const recent = yield* backend.history(id, { limit: 100 })
  if (recent.length === 0) return Either.left([prompt])
  if ((yield* backend.pendingApprovals(id)).length > 0) return Either.left([])
  const items = recent.map((s) => s.item)
  const lastStop = items.findLast((item) => item.type === "stop_reason")
  const lastUser = items.findLastIndex((item) => item.type === "user_message")
  const answer = items.slice(lastUser + 1).findLast((item) => item.type === "assistant_message")
  if (lastStop?.type === "stop_reason" && lastStop.reason === "end_turn" && answer?.type === "assistant_message") {
    return Either.right(answer.content)
  }
  return Either.left([CONTINUE_TEXT])
})

/** What the child's task stream ended with. */
interface ChildEnd {
  readonly answer: string | undefined
  readonly stop: StopReasonValue | undefined
  readonly error: string | undefined
}

const outcome = (description: string, maxTurns: number, end: ChildEnd): { readonly ok: boolean; readonly text: string } => {
  if (end.stop === "end_turn") return { ok: true, text: end.answer ?? "(the subagent finished without a report)" }
  const last = end.answer === undefined ? "" : `\nIts last message:\n${end.answer}`
  if (end.stop === "max_turns") return { ok: false, text: `subagent «${description}» ran out of turns (${maxTurns}) before finishing.${last}` }
  const why = end.error === undefined ? "" : `: ${end.error}`
  return { ok: false, text: `subagent «${description}» stopped (${end.stop ?? "no stop reason"})${why}${last}` }
}

/** The child's task: streamed into the parent's with `origin`, read down to its answer and stop. */
const runChild = Effect.fn("Subagent.runChild")(function*(host: SubagentHost, call: ToolCall, args: TaskArgs, agent: AgentDefinition) {
  const executor = restricted(host.executor, agent)
  const parent = yield* host.backend.getConversation(host.conversationId)
  const { model: _model, ...inherited } = parent.settings
  const model = agent.model ?? parent.settings.model
  const conversation = yield* host.backend.createConversation(
    { ...inherited, ...(model !== undefined ? { model } : {}), system_prompt: agent.prompt, tools: yield* executor.definitions },
    { title: args.description, parent: { conversation_id: host.conversationId, tool_call_id: call.tool_call_id } }
  )
  const origin: Origin = { conversation_id: conversation.id, tool_call_id: call.tool_call_id, description: args.description }
  const resumed = yield* resumePoint(host.backend, conversation.id, args.prompt)
  if (Either.isRight(resumed)) return { answer: resumed.right, stop: "end_turn", error: undefined } satisfies ChildEnd
  const session = yield* host.open({ conversationId: conversation.id, parent: { gate: host.gate } }, executor)
  const approver = host.approver
  const options = {
    maxTurns: host.maxTurns,
    ...(approver !== undefined ? { approver: ((request) => approver({ ...request, origin })) satisfies Approver } : {}),
    ...(host.thinking !== undefined ? { thinking: host.thinking } : {})
  }
  let end: ChildEnd = { answer: undefined, stop: undefined, error: undefined }
  yield* session.run(resumed.left, options).pipe(
    Stream.runForEachChunk((chunk) => {
      const events = Chunk.toReadonlyArray(chunk)
      for (const event of events) {
        if (event.type === "user_message") end = { ...end, answer: undefined }
        if (event.type === "assistant_message") end = { ...end, answer: event.content }
        if (event.type === "stop_reason") end = { ...end, stop: event.reason, error: event.error?.message }
      }
      return host.emit(events.map((event) => ({ ...event, origin })))
    })
  )
  return end
})

/** One Task call, from its arguments to its result; never fails (a failure is the result's text). */
const runTaskCall = Effect.fn("Subagent.runTaskCall")(function*(host: SubagentHost, call: ToolCall) {
  const began = yield* Clock.currentTimeMillis
  const elapsed = Effect.map(Clock.currentTimeMillis, (now) => Math.max(0, now - began))
  const parsed = parseTaskCall(call.arguments, host.types)
  if (Either.isLeft(parsed)) return errorResult(call, parsed.left, 0)
  const { agent, args } = parsed.right
  const ended = yield* Effect.either(Effect.scoped(runChild(host, call, args, agent)))
  if (Either.isLeft(ended)) return errorResult(call, `subagent «${args.description}» failed: ${ended.left._tag}: ${ended.left.message}`, yield* elapsed)
  const { ok, text } = outcome(args.description, host.maxTurns, ended.right)
  return { tool_call_id: call.tool_call_id, status: ok ? "success" : "error", output: text, duration_ms: yield* elapsed } satisfies ToolResult
})

/**
 * A parent task's executor: `Task` calls run a child (in a fiber of the caller's scope, so an
 * interrupt of the batch interrupts the child); every other call goes to the workspace's executor.
 */
export const runningTasks = (offered: ToolExecutor["Type"], host: SubagentHost): ToolExecutor["Type"] => ({
  ...offered,
  start: (call, options) =>
    call.name === TASK_TOOL
      // The batch starts tools uninterruptibly (lock queueing); the child itself must stay interruptible.
      ? Effect.forkScoped(Effect.interruptible(runTaskCall(host, call)))
      : offered.start(call, options)
})
