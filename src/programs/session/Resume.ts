import { Effect, Either, Option, Ref, type Stream } from "effect"
import { type BackendError, StreamBroken } from "../../domain/Errors.js"
import type { ApprovalDecision, Chunk, StopReasonValue } from "../../domain/Events.js"
import type { ConversationId, RunId } from "../../domain/Ids.js"
import type { ToolReturn } from "../../domain/Messages.js"
import { turnBudgets } from "../../domain/Recovery.js"
import { retry } from "../../domain/RecoverySchedule.js"
import type { Backend } from "../../services/Backend.js"
import type { FileView } from "../../services/ToolExecutor.js"
import type { TaskDeps } from "./Task.js"
import { withToolBatch } from "./ToolBatch.js"

/**
 * Picking up where something stopped: calls a dead process left pending, a run whose stream broke
 * off before its stop_reason, and what the conversation's model saw of files.
 */

/**
 * Calls a dead process left pending without a committed result are shown again and the approver is
 * asked again: re-running one is the user's decision, never silent (a call whose result was committed
 * as it finished is not pending, and never runs again). Their results go with the next input.
 */
export const pendingCalls = Effect.fn("Resume.pendingCalls")(function*(deps: TaskDeps) {
  const pending = yield* deps.backend.pendingApprovals(deps.conversationId)
  const none: { readonly results: ReadonlyArray<ToolReturn>; readonly decisions: ReadonlyArray<ApprovalDecision> } = { results: [], decisions: [] }
  if (pending.length === 0) return none
  return yield* withToolBatch(deps, deps.batch, (batch) =>
    Effect.gen(function*() {
      yield* deps.emit(pending)
      yield* Effect.forEach(pending, (call) => batch.add(call), { discard: true })
      return { results: yield* batch.settle, decisions: yield* batch.uncommittedDecisions }
    }))
})

/**
 * One run read to its stop reason. `read` consumes a stream of the run's chunks and returns the
 * stop reason it saw; a stream that ended without one is followed again after the last seq read
 * (the run goes on in the backend), on the recovery policy's reconnect budget for the run — not
 * restarted by progress. The run's own errors, and a break before its first chunk (nothing to
 * follow), end it at once.
 */
export const followRun = Effect.fn("Resume.followRun")(function*(
  deps: Pick<TaskDeps, "backend" | "progress" | "emit" | "wait">,
  chunks: Stream.Stream<Chunk, BackendError>,
  read: (chunks: Stream.Stream<Chunk, BackendError>) => Effect.Effect<Option.Option<StopReasonValue>, BackendError>
) {
  const { backend, progress } = deps
  // Where the next attempt reads from: the run's own stream, then the run followed after a seq.
  const resumeAt = yield* Ref.make(Option.none<{ readonly runId: RunId; readonly after: number }>())
  const attempt = Effect.gen(function*() {
    const source = Option.match(yield* Ref.get(resumeAt), {
      onNone: () => chunks,
      onSome: ({ after, runId }) => backend.streamRun(runId, { after })
    })
    const stop = yield* Effect.either(read(source))
    // The run's own failures pass this policy by: the task's recovery (busy, stale approval) decides on them.
    if (Either.isLeft(stop)) return Either.left(stop.left)
    if (Option.isSome(stop.right)) return Either.right(stop.right.value)
    const { lastSeq, runId } = yield* Ref.get(progress)
    const broken = new StreamBroken({ ...(runId !== undefined ? { runId } : {}), message: "the run's stream ended without a stop_reason" })
    if (runId === undefined) return Either.left(broken)
    yield* Ref.set(resumeAt, Option.some({ runId, after: lastSeq }))
    return yield* Effect.fail(broken)
  })
  const outcome = yield* retry(attempt, {
    budgets: turnBudgets,
    // The wait before following again is the client's own: shown as a `wait` event, and skippable.
    announce: (_, delayMs) => deps.emit([{ type: "wait", reason: "stream_reconnect", retry_in_ms: delayMs }]),
    wait: deps.wait,
    orElse: (broken) => Effect.succeed(Either.left(broken))
  })
  return yield* outcome
})

const HISTORY_PAGE = 1000

/**
 * Brings the view of the files the conversation's model saw up to its history: every item after
 * the last one read (all of them, the first time). Another process may have continued the
 * conversation since (a crash, `run --continue`, another client of the server). A failure leaves
 * the view as it is: an Edit then at worst asks the model to Read the file again.
 */
export const syncFileView = (backend: Backend["Type"], id: ConversationId, view: FileView, readTo: Ref.Ref<number>) =>
  Effect.gen(function*() {
    for (;;) {
      const page = yield* backend.history(id, { after: yield* Ref.get(readTo), limit: HISTORY_PAGE })
      view.observe(page.map((stored) => stored.item))
      const last = page[page.length - 1]
      if (last !== undefined) yield* Ref.set(readTo, last.position)
      if (page.length < HISTORY_PAGE) return
    }
  }).pipe(Effect.catchAll((error) => Effect.logWarning(`could not read what ${id} saw of files: ${error.message}`)))
