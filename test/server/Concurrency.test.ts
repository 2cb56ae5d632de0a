import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import * as Path from "node:path"
import { Otid } from "../../src/domain/Ids.js"
import { layerScripted, Turn } from "../../src/services/provider/Scripted.js"
import { Store } from "../../src/services/Store.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import { json, startServer } from "../support/serverHarness.js"
import { tempDir } from "../support/tempDir.js"

interface Outcome {
  readonly status: number
  readonly body: Record<string, unknown>
}

/** POSTs one message; for a 200 reads the first SSE event (its run id) and hangs up. */
const post = (url: string, otid: string): Promise<Outcome> =>
  fetch(url, json({ messages: [{ type: "user_message", content: `hello from ${otid}`, otid }] })).then(async (response) => {
    if (response.status !== 200) return { status: response.status, body: await response.json() as Record<string, unknown> }
    const reader = response.body!.getReader()
    let text = ""
    while (!text.includes("\n\n")) text += new TextDecoder().decode((await reader.read()).value)
    await reader.cancel()
    const data = /^data: (.*)$/m.exec(text)![1]!
    return { status: 200, body: JSON.parse(data) as Record<string, unknown> }
  })

describe("server concurrency", () => {
  it.scoped("50 concurrent POST …/messages on one conversation: one run, 49 × 409 conversation_busy, one user message stored", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const deps = yield* Layer.build(Layer.merge(layerSqlite({ filename: Path.join(dir, "baton.db") }), layerScripted([Turn.stall({ text: "working" })])))
      const store = Context.get(deps, Store)
      const server = yield* startServer().pipe(Effect.provide(deps))
      const conv = yield* store.createConversation({})
      const otids = Array.from({ length: 50 }, (_, i) => `race-${i}`)
      const url = `${server.url}/v1/conversations/${conv.id}/messages`
      const outcomes = yield* Effect.promise(() => Promise.all(otids.map((otid) => post(url, otid))))

      const won = outcomes.filter((o) => o.status === 200)
      const busy = outcomes.filter((o) => o.status === 409)
      assert.strictEqual(won.length, 1)
      assert.strictEqual(busy.length, 49)
      const runId = won[0]!.body.run_id
      assert.isTrue(busy.every((o) => o.body.code === "conversation_busy" && o.body.run_id === runId && o.body.conversation_id === conv.id))

      const runs = yield* Effect.forEach(otids, (otid) => store.runByOtid(conv.id, Otid.make(otid)))
      assert.deepStrictEqual(runs.filter(Option.isSome).map((r) => r.value.id), [runId])
      const users = (yield* store.listItems(conv.id)).filter((h) => h.item.type === "user_message")
      assert.strictEqual(users.length, 1)

      const cancelled = yield* Effect.promise(() => fetch(`${server.url}/v1/conversations/${conv.id}/cancel`, { method: "POST" }))
      assert.strictEqual(cancelled.status, 204)
    }))
})
