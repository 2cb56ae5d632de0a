import { Effect, Either, Exit, Ref, Scope, Stream } from "effect"
import type { BackendError } from "../../domain/Errors.js"
import { StreamBroken } from "../../domain/Errors.js"
import type { ApprovalDecision, Chunk, StopReasonValue, TaskEvent } from "../../domain/Events.js"
import type { ConversationId, Otid } from "../../domain/Ids.js"
import type { InputMessage, ToolReturn, UserMessage } from "../../domain/Messages.js"
import type { ThinkingLevel } from "../../domain/ProviderEvent.js"
import { type Attempts, noAttempts, step as policyStep, turnBudgets } from "../../domain/Recovery.js"
import { STALE_APPROVAL_REASON, steeringText, turnAbortedText } from "../../domain/Tags.js"
import type { Backend } from "../../services/Backend.js"
import type { ExecuteOptions, ToolExecutor } from "../../services/ToolExecutor.js"
import type { Approver, Gate } from "./ApprovalGate.js"
import { makeToolBatch, type ToolBatch } from "./ToolBatch.js"
import type { TaskState } from "./TaskState.js"

export interface TaskDeps {
  readonly backend: Backend["Type"]
  readonly executor: ToolExecutor["Type"]
  readonly gate: Gate
  readonly conversationId: ConversationId
  readonly approver: Approver | undefined
  readonly maxTurns: number
  readonly thinking: ThinkingLevel | undefined
  readonly executeOptions: ExecuteOptions
  readonly emit: (events: ReadonlyArray<TaskEvent>) => Effect.Effect<void>
  readonly otid: Effect.Effect<Otid>
  readonly state: Ref.Ref<TaskState>
  /** Takes every queued steering text (the queue is then empty). */
  readonly drainSteering: Effect.Effect<ReadonlyArray<string>>
  /**
   * At the end of a turn: takes the queued texts, or — when there are none — closes the queue in the
   * same step, so a steer that comes later returns false instead of being silently dropped.
   */
  readonly drainOrClose: Effect.Effect<ReadonlyArray<string>>
}

interface RunOutcome {
  readonly stop: StopReasonValue
}

/** Reads one run's chunks into the task: forwards them, feeds tool calls to the batch, resumes a broken stream. */
const consumeRun = (deps: TaskDeps, chunks: Stream.Stream<Chunk, BackendError>, batch: ToolBatch) =>
  Effect.gen(function*() {
    let held: Chunk | undefined
    let stop: StopReasonValue | undefined
    const onChunk = (chunk: Chunk) =>
      Effect.gen(function*() {
        yield* Ref.update(deps.state, (s) => ({
          ...s,
          runId: chunk.run_id,
          lastSeq: chunk.seq,
          unsent: [],
          ...(chunk.type === "request_begin" ? { partialText: "", modelComplete: false } : {}),
          ...(chunk.type === "text_delta" ? { partialText: s.partialText + chunk.content } : {}),
          ...(chunk.type === "request_end" && chunk.status === "ok" ? { modelComplete: true } : {}),
          ...(chunk.type === "stop_reason" ? { modelComplete: true } : {})
        }))
        // token_usage and its request_end reach the task stream together, never split by a tool result.
        if (chunk.type === "token_usage") {
          held = chunk
          return
        }
        const out = held !== undefined ? [held, chunk] : [chunk]
        held = undefined
        yield* deps.emit(out)
        if (chunk.type === "tool_call") yield* batch.add(chunk)
        if (chunk.type === "stop_reason") stop = chunk.reason
      })
    let attempts: Attempts = noAttempts
    let source = chunks
    for (;;) {
      const result = yield* Effect.either(Stream.runForEach(source, onChunk))
      if (Either.isLeft(result)) return yield* Effect.fail(result.left)
      if (stop !== undefined) return { stop } satisfies RunOutcome
      const s = yield* Ref.get(deps.state)
      const broken = new StreamBroken({ ...(s.runId !== undefined ? { runId: s.runId } : {}), message: "the run's stream ended without a stop_reason" })
      const next = policyStep(attempts, broken, turnBudgets)
      attempts = next.attempts
      if (next.decision._tag !== "Retry" || s.runId === undefined) return yield* Effect.fail(broken)
      yield* Effect.sleep(next.decision.delayMs)
      source = deps.backend.streamRun(s.runId, { after: s.lastSeq })
    }
  })

const denialsFor = (deps: TaskDeps, calls: ReadonlyArray<{ readonly tool_call_id: ToolReturn["tool_call_id"] }>) =>
  Effect.forEach(calls, (call) =>
    Effect.map(deps.otid, (otid) => ({
      decision: {
        type: "approval_decision",
        tool_call_id: call.tool_call_id,
        decision: "deny",
        source: "recovery",
        reason: STALE_APPROVAL_REASON
      } satisfies ApprovalDecision,
      result: { type: "tool_return", tool_call_id: call.tool_call_id, status: "denied", content: STALE_APPROVAL_REASON, otid } satisfies ToolReturn
    })))

/**
 * One run with the task's recovery: a busy conversation is waited for, a stale pending approval is
 * closed once, everything else is the run's own business (its stop_reason says how it went).
 */
const sendRun = (deps: TaskDeps, initial: ReadonlyArray<InputMessage>, events: ReadonlyArray<ApprovalDecision>, recovery: Ref.Ref<Attempts>) =>
  Effect.gen(function*() {
    let input = initial
    let trace = events
    for (;;) {
      const scope = yield* Scope.make()
      const batch = yield* makeToolBatch({
        executor: deps.executor,
        gate: deps.gate,
        approver: deps.approver,
        emit: deps.emit,
        otid: deps.otid,
        options: deps.executeOptions
      }).pipe(Scope.extend(scope))
      const unsent = input.filter((m): m is ToolReturn => m.type === "tool_return")
      yield* Ref.update(deps.state, (s) => ({ ...s, batch, batchScope: scope, modelComplete: false, partialText: "", unsent }))
      const chunks = deps.backend.send(deps.conversationId, { messages: input, events: trace, ...(deps.thinking !== undefined ? { thinking: deps.thinking } : {}) })
      const outcome = yield* Effect.either(consumeRun(deps, chunks, batch))
      if (Either.isRight(outcome)) return { ...outcome.right, batch, scope }
      yield* Scope.close(scope, Exit.void)
      const error = outcome.left
      if (error._tag !== "Conflict" && error._tag !== "ApprovalPending") return yield* Effect.fail(error)
      const next = policyStep(yield* Ref.get(recovery), error, turnBudgets)
      yield* Ref.set(recovery, next.attempts)
      switch (next.decision._tag) {
        case "WaitBusy":
          yield* Effect.sleep(next.decision.delayMs)
          continue
        case "ResolveStaleApproval": {
          const pending = yield* deps.backend.pendingApprovals(deps.conversationId)
          const closed = yield* denialsFor(deps, pending)
          yield* deps.emit(closed.flatMap((c) => [c.decision, c.result]))
          input = [...closed.map((c) => c.result), ...input.filter((m) => m.type === "user_message")]
          trace = [...trace, ...closed.map((c) => c.decision)]
          continue
        }
        default:
          return yield* Effect.fail(error)
      }
    }
  })

export const runTaskLoop = (deps: TaskDeps, prompt: ReadonlyArray<UserMessage>) =>
  Effect.gen(function*() {
    const recovery = yield* Ref.make<Attempts>(noAttempts)
    const asMessages = (texts: ReadonlyArray<string>) =>
      Effect.forEach(texts, (text) => Effect.map(deps.otid, (otid): UserMessage => ({ type: "user_message", content: steeringText(text), otid })))
    const steering = Effect.flatMap(deps.drainSteering, asMessages)
    let input: ReadonlyArray<InputMessage> = prompt
    let events: ReadonlyArray<ApprovalDecision> = []
    const pending = yield* deps.backend.pendingApprovals(deps.conversationId)
    if (pending.length > 0) {
      // Resume: calls a dead process left pending are the user's decision again, never re-run silently.
      const scope = yield* Scope.make()
      const batch = yield* makeToolBatch({ executor: deps.executor, gate: deps.gate, approver: deps.approver, emit: deps.emit, otid: deps.otid, options: deps.executeOptions }).pipe(Scope.extend(scope))
      yield* Ref.update(deps.state, (s) => ({ ...s, batch, batchScope: scope, modelComplete: true }))
      yield* deps.emit(pending)
      for (const call of pending) yield* batch.add(call)
      const results = { results: yield* batch.settle, decisions: yield* batch.decisions }
      yield* Scope.close(scope, Exit.void)
      input = [...results.results, ...input]
      events = results.decisions
    }
    for (let turn = 1;; turn++) {
      const steered = yield* steering
      yield* deps.emit(steered)
      input = [...input, ...steered]
      const { batch, scope, stop } = yield* sendRun(deps, input, events, recovery)
      if (stop === "requires_approval") {
        const results = yield* batch.settle
        events = yield* batch.decisions
        yield* Scope.close(scope, Exit.void)
        if (turn >= deps.maxTurns) {
          yield* deps.backend.cancel(deps.conversationId, { results, events })
          yield* deps.emit([{ type: "stop_reason", reason: "max_turns" }])
          return
        }
        input = results
        continue
      }
      const calls = yield* batch.calls
      if (calls.length > 0) {
        // Calls a failed request issued may have run already; tell the model what they did.
        const results = yield* batch.settle
        yield* Scope.close(scope, Exit.void)
        const text = turnAbortedText("", calls.map((call) => ({ call, output: results.find((r) => r.tool_call_id === call.tool_call_id)?.content })), "Your previous request failed after issuing tool calls; they were handled as follows.")
        yield* deps.backend.cancel(deps.conversationId, { turnAborted: text, events: yield* batch.decisions })
        return
      }
      yield* Scope.close(scope, Exit.void)
      if (stop !== "end_turn") return
      const more = yield* Effect.flatMap(deps.drainOrClose, asMessages)
      if (more.length === 0) return
      if (turn >= deps.maxTurns) {
        yield* deps.emit([{ type: "stop_reason", reason: "max_turns" }])
        return
      }
      // Steering that arrived as the model finished continues the task instead of ending it.
      yield* deps.emit(more)
      input = more
      events = []
    }
  })

