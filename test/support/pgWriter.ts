/**
 * Child process for the PostgreSQL concurrency test: waits for "go" on stdin (so two of them start
 * together), then for `rounds` rounds, on the database at argv[2]:
 * - tries to start a run of conversation argv[3] under its own otid; when it gets one, it writes
 *   `start:<run>`, three chunks, and `end:<run>` with the run's stop_reason, finishing it (the other
 *   process gets Conflict meanwhile);
 * - appends four chunks to the long run argv[4] of conversation argv[5], right after the last seq it
 *   read (the other process may have written in between: then ChunkSeqError, and it reads again).
 * One JSON line per outcome on stdout; a last line `{"done":true}`.
 */
import { Effect, Option } from "effect"
import { createInterface } from "node:readline"
import { ConversationId, Otid, RunId } from "../../src/domain/Ids.js"
import { layer as layerPg } from "../../src/services/store/Pg.js"
import { Store } from "../../src/services/Store.js"

export type Outcome =
  | { readonly ran: string }
  | { readonly busy: string }
  | { readonly appended: ReadonlyArray<number> }
  | { readonly gap: { readonly expected: number; readonly got: number } }
  | { readonly done: true }

const [url, runsConversation, sharedRun, sharedConversation, label, rounds] = process.argv.slice(2) as [string, string, string, string, string, string]
const say = (outcome: Outcome) => Effect.sync(() => process.stdout.write(`${JSON.stringify(outcome)}\n`))

await new Promise<void>((resolve) => {
  const lines = createInterface({ input: process.stdin })
  lines.once("line", () => {
    lines.close()
    resolve()
  })
})

const program = Effect.gen(function*() {
  const store = yield* Store
  const conversationId = ConversationId.make(runsConversation)
  const shared = RunId.make(sharedRun)
  const sharedConversationId = ConversationId.make(sharedConversation)
  for (let round = 0; round < Number(rounds); round++) {
    const started = yield* Effect.either(store.createRun(conversationId, Otid.make(`${label}-${round}`), "turn"))
    if (started._tag === "Left") {
      if (started.left._tag !== "Conflict") return yield* started.left
      yield* say({ busy: started.left.runId ?? "" })
    } else {
      const run = started.right.run
      const text = (content: string) => ({ item: { type: "assistant_message" as const, content } })
      yield* store.commit({ conversationId, items: [text(`start:${run.id}`)] })
      yield* store.commit({
        conversationId,
        chunks: [1, 2, 3].map((seq) => ({ type: "text_delta" as const, content: `${label}`, run_id: run.id, seq }))
      })
      yield* store.commit({
        conversationId,
        items: [text(`end:${run.id}`)],
        chunks: [{ type: "stop_reason", reason: "end_turn", run_id: run.id, seq: 4 }],
        finishRun: { runId: run.id, status: "completed", stopReason: "end_turn" }
      })
      yield* say({ ran: run.id })
    }

    const last = (yield* store.getRun(shared)).lastSeq
    const seqs = [1, 2, 3, 4].map((k) => last + k)
    const appended = yield* Effect.either(store.commit({
      conversationId: sharedConversationId,
      chunks: seqs.map((seq) => ({ type: "text_delta" as const, content: `${label}:${seq}`, run_id: shared, seq }))
    }))
    if (appended._tag === "Right") yield* say({ appended: seqs })
    else if (appended.left._tag === "ChunkSeqError") yield* say({ gap: { expected: appended.left.expected, got: appended.left.got } })
    else return yield* appended.left
  }
  yield* say({ done: true })
  return Option.none()
})

await Effect.runPromise(program.pipe(Effect.provide(layerPg({ url }))))
