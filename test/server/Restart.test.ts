import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema, Stream } from "effect"
import { spawn } from "node:child_process"
import * as Path from "node:path"
import { type Chunk, TaskEventFromJson } from "../../src/domain/Events.js"
import { bundleEntry } from "../support/bundle.js"
import { readSse, remote } from "../support/serverHarness.js"
import { tempDir } from "../support/tempDir.js"
import { collect, input, user } from "../support/testing.js"

type TurnSpec = { readonly text: ReadonlyArray<string> } | { readonly stall: string }

/** A server child process on `filename`; `kill` sends SIGKILL and waits for it to be gone. */
const startServer = (bundle: string, filename: string, script: ReadonlyArray<TurnSpec>) =>
  Effect.acquireRelease(
    Effect.promise(() => {
      const proc = spawn(process.execPath, [bundle, filename, JSON.stringify(script)], { stdio: ["ignore", "pipe", "pipe"] })
      const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.once("exit", (_, signal) => resolve(signal)))
      let stderr = ""
      proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
      return new Promise<{ url: string; kill: Effect.Effect<NodeJS.Signals | null> }>((resolve, reject) => {
        let out = ""
        proc.stdout.on("data", (d: Buffer) => {
          out += d.toString()
          const line = out.split("\n")[0]
          if (out.includes("\n")) {
            const { url } = JSON.parse(line!) as { url: string }
            resolve({ url, kill: Effect.promise(() => (proc.kill("SIGKILL"), exited)) })
          }
        })
        void exited.then(() => reject(new Error(`server exited before listening: ${stderr}`)))
      })
    }),
    (server) => server.kill
  )

const decode = Schema.decodeUnknownSync(TaskEventFromJson)

describe("server restart", () => {
  it.scopedLive("killed with SIGKILL after a run finished: a new server on the same SQLite file serves GET /v1/runs/:id/stream?after=0 with the full run", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const bundle = yield* bundleEntry("serverMain.ts", dir)
      const filename = Path.join(dir, "baton.db")

      const first = yield* startServer(bundle, filename, [{ text: ["Hel", "lo", " there"] }])
      const before = yield* remote({ url: first.url })
      const conv = yield* before.createConversation({})
      const chunks = yield* collect(before.send(conv.id, input(user("hi"))))
      assert.strictEqual(chunks.at(-1)!.type, "stop_reason")
      assert.strictEqual(yield* first.kill, "SIGKILL")

      const second = yield* startServer(bundle, filename, [])
      const runId = chunks[0]!.run_id
      const replay = yield* readSse(`${second.url}/v1/runs/${runId}/stream?after=0`)
      assert.strictEqual(replay.status, 200)
      assert.deepStrictEqual(replay.events.map((e) => decode(e.data)), [...chunks])
      assert.deepStrictEqual(replay.events.map((e) => e.id), chunks.map((c) => `${runId}:${c.seq}`))
      const after = yield* remote({ url: second.url })
      assert.deepStrictEqual(yield* collect(after.streamRun(runId, { after: 3 })), chunks.slice(3))
    }))

  it.scopedLive("killed mid-run: the next server closes the run as failed, its stream ends with stop_reason error, and the conversation goes on", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const bundle = yield* bundleEntry("serverMain.ts", dir)
      const filename = Path.join(dir, "baton.db")

      const first = yield* startServer(bundle, filename, [{ stall: "half an answ" }])
      const before = yield* remote({ url: first.url })
      const conv = yield* before.createConversation({})
      const head = yield* collect(before.send(conv.id, input(user("hi"))).pipe(Stream.takeUntil((c) => c.type === "text_delta")))
      yield* first.kill

      const second = yield* startServer(bundle, filename, [{ text: ["again"] }])
      const after = yield* remote({ url: second.url })
      const replay: ReadonlyArray<Chunk> = yield* collect(after.streamRun(head[0]!.run_id))
      assert.deepStrictEqual(replay.slice(0, head.length), head)
      assert.deepStrictEqual(replay.slice(-2).map((c) => c.type), ["request_end", "stop_reason"])
      const stop = replay.at(-1)!
      assert.deepStrictEqual(stop.type === "stop_reason" && [stop.reason, stop.error?.tag], ["error", "ProcessStopped"])
      const next = yield* collect(after.send(conv.id, input(user("still there?"))))
      assert.isTrue(next.some((c) => c.type === "assistant_message" && c.content === "again"))
    }))
})
