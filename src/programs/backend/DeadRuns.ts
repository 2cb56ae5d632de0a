import { Effect, Stream } from "effect"
import type { Chunk, ErrorInfo, TaskEvent } from "../../domain/Events.js"
import type { NewItem } from "../../domain/History.js"
import type { Run } from "../../domain/Run.js"
import { issuedCalls } from "../../domain/ToolResults.js"
import { ownerAlive } from "../../services/ProcessIdentity.js"
import { Store } from "../../services/Store.js"
import { makeRunLog } from "./RunLog.js"

const PROCESS_STOPPED = {
  tag: "ProcessStopped",
  message: "the process running this run stopped before the run finished; send the message again to continue"
}

/** A compaction whose runner was lost: it is not resumed (a new one can be asked for), only closed. */
export const RUNNER_LOST = {
  tag: "RunnerLost",
  message: "the runner running this compaction stopped before it finished; compact again to retry"
}

const attemptOf = (chunk: Chunk | undefined): number => (chunk?.type === "request_begin" ? chunk.attempt : 0)

/** Closes one run another process left `running` (see closeDeadRuns), ending it with `error`. */
export const closeRun = Effect.fn("DeadRuns.close")(function*(store: Store["Type"], run: Run, error: ErrorInfo) {
  const chunks = yield* Stream.runCollect(store.readChunks(run.id, 0)).pipe(Effect.map((c) => Array.from(c)))
  const lastEnd = chunks.findLastIndex((c) => c.type === "request_end")
  const lastBegin = chunks.findLastIndex((c) => c.type === "request_begin")
  const openRequest = lastBegin > lastEnd
  const issued = new Set(run.kind === "turn" ? issuedCalls(chunks) : [])
  const shown = chunks.filter((c, i) =>
    (c.type === "tool_call" && !issued.has(c)) || (i > lastEnd && (c.type === "assistant_message" || c.type === "reasoning_message"))
  )
  // Text still streaming when the process died exists only as deltas; keep it in the trace too.
  const lastMessage = chunks.findLastIndex((c) => c.type === "assistant_message" || c.type === "tool_call" || c.type === "reasoning_message")
  const openText = chunks
    .slice(Math.max(lastMessage, lastBegin) + 1)
    .flatMap((c) => (c.type === "text_delta" ? [c.content] : []))
    .join("")
  const log = yield* makeRunLog(store, { conversationId: run.conversationId, runId: run.id, lastSeq: run.lastSeq })
  const last: ReadonlyArray<TaskEvent> = [
    ...(openRequest ? [{ type: "request_end" as const, status: "failed" as const, attempt: attemptOf(chunks[lastBegin]), error }] : []),
    { type: "stop_reason", reason: "error", error }
  ]
  yield* log.emit(last.map((event) => ({ event, record: "item" as const })), {
    before: [
      ...shown.map((item): NewItem => ({ item, traceOnly: true })),
      ...[...issued].map((item): NewItem => ({ item })),
      ...(openRequest && openText.length > 0
        ? [{ item: { type: "assistant_message", content: openText, run_id: run.id }, traceOnly: true } satisfies NewItem]
        : [])
    ],
    finish: { status: "failed", stopReason: "error", onCommitted: Effect.void }
  })
})

/**
 * The dead-run rule, at start-up: every run left `running` by a process that died is closed, so its
 * conversation is never stuck busy: request_end{failed} (if a request was open), stop_reason{error},
 * and the messages the stream had shown kept in the trace (never the model context: the request did
 * not complete). The complete tool calls it issued are the exception: they may have run, and their
 * results may be committed already, so they stand in the context as pending calls. A resumed client
 * then asks again only for those that have no result. A run that cannot be closed is logged and left.
 */
export const closeDeadRuns = Effect.fn("DeadRuns.closeAll")(function*() {
  const store = yield* Store
  for (const run of (yield* store.runningRuns).filter((r) => !ownerAlive(r.owner))) {
    yield* closeRun(store, run, PROCESS_STOPPED).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`could not close dead run ${run.id}`, cause)))
  }
})
