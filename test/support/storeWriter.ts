/**
 * Child process for the durability test: waits for "go" on stdin (so the test can start it early
 * and overlap its start-up with the previous child's run), then appends to the store at argv[2]
 * forever. Each commit is one logical write of 3 items and 4 chunks (5 with the run's stop_reason)
 * and, once commit has returned, one JSON line on stdout saying exactly what it committed.
 */
import { Effect, Option } from "effect"
import { createInterface } from "node:readline"
import { Otid, ToolCallId } from "../../src/domain/Ids.js"
import { Store } from "../../src/services/Store.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"

export interface Reported {
  readonly run: string
  readonly step: number
  readonly ids: ReadonlyArray<string>
  readonly positions: ReadonlyArray<number>
  readonly lastSeq: number
}

export const STEPS_PER_RUN = 5

const filename = process.argv[2]!
await new Promise<void>((resolve) => createInterface({ input: process.stdin }).once("line", () => resolve()))

const program = Effect.gen(function*() {
  const store = yield* Store
  const existing = (yield* store.listConversations({ limit: 1 })).items[0]
  const conversation = existing ?? (yield* store.createConversation({}, { title: "durability" }))
  const id = conversation.id
  while (true) {
    const active = yield* store.activeRun(id)
    const run = Option.isSome(active)
      ? active.value
      : (yield* store.createRun(id, Otid.make(`otid-${crypto.randomUUID()}`), "turn")).run
    const step = Math.floor(run.lastSeq / 4)
    const last = step === STEPS_PER_RUN - 1
    const callId = ToolCallId.make(`call-${run.id}-${step}`)
    const seq = (k: number) => run.lastSeq + k + 1
    const chunks = [0, 1, 2, 3].map((k) => ({ type: "text_delta" as const, content: `${step}:${k}`, run_id: run.id, seq: seq(k) }))
    const items = yield* store.commit({
      conversationId: id,
      items: [
        { item: { type: "assistant_message", content: `${run.id}/${step}` } },
        { item: { type: "tool_call", tool_call_id: callId, name: "Bash", arguments: "{}" } },
        { item: { type: "tool_return", tool_call_id: callId, status: "success", content: "x".repeat(300), otid: Otid.make(`o-${step}`) } }
      ],
      chunks: last ? [...chunks, { type: "stop_reason", reason: "end_turn", run_id: run.id, seq: seq(4) }] : chunks,
      ...(last ? { finishRun: { runId: run.id, status: "completed", stopReason: "end_turn" } } : {})
    })
    const reported: Reported = {
      run: run.id,
      step,
      ids: items.map((i) => i.id),
      positions: items.map((i) => i.position),
      lastSeq: seq(last ? 4 : 3)
    }
    process.stdout.write(`${JSON.stringify(reported)}\n`)
  }
})

await Effect.runPromise(program.pipe(Effect.provide(layerSqlite({ filename }))))
