import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs, runCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"

/** `baton usage`: what every model request reported, compaction and title included, priced from settings. */

describe("baton usage (built CLI, loopback model)", () => {
  it.scopedLive("--json totals equal the mock's reported usage (a turn, a compaction, a title), cost from the pricing table", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const usages = [{ input: 100, output: 10, cached: 40 }, { input: 120, output: 20 }, { input: 30, output: 3 }]
      const server = yield* MockModelServer.make({
        replies: [
          Reply.text("Hi there.", { usage: usages[0] }),
          Reply.text("[summary]greeted[/summary]", { usage: usages[1] }),
          Reply.text("A greeting", { usage: usages[2] })
        ]
      })
      Fs.writeFileSync(Path.join(dirs.home, "settings.json"), JSON.stringify({
        pricing: { "mock-model": { input: 2, output: 10, cacheRead: 0.5 } }
      }))
      const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home }
      const chat = yield* runCli(["chat", "-w", dirs.workspace], { env, input: "hello\n/compact\n/title\n" })
      assert.strictEqual(chat.code, 0, chat.stderr)
      assert.strictEqual((yield* server.requests).length, 3)

      const result = yield* runCli(["usage", "--json"], { env, cwd: dirs.workspace })
      assert.strictEqual(result.code, 0, result.stderr)
      const report = JSON.parse(result.stdout) as { total: Record<string, number>; conversations: ReadonlyArray<Record<string, unknown>> }
      const sum = (f: (u: typeof usages[number]) => number) => usages.reduce((acc, u) => acc + f(u), 0)
      const totals = {
        requests: 3,
        input_tokens: sum((u) => u.input),
        output_tokens: sum((u) => u.output),
        cache_read_tokens: sum((u) => u.cached ?? 0),
        cache_write_tokens: 0
      }
      // (60·2 + 40·0.5 + 10·10) + (120·2 + 20·10) + (30·2 + 3·10) = 770 USD per Mtok
      assert.deepStrictEqual(report.total, { ...totals, cost_usd: 0.00077 })
      assert.strictEqual(report.conversations.length, 1)
      assert.deepInclude(report.conversations[0], { model: "mock-model", title: "A greeting", ...totals, cost_usd: 0.00077 })

      const text = yield* runCli(["usage"], { env, cwd: dirs.workspace })
      assert.match(text.stdout, /total\s+3\s+250\s+33\s+40\s+0\s+\$0\.0008/)
      const none = yield* runCli(["usage", "--json", "--since", "2999-01-01"], { env, cwd: dirs.workspace })
      assert.strictEqual((JSON.parse(none.stdout) as { total: { requests: number } }).total.requests, 0)
      const bad = yield* runCli(["usage", "--since", "yesterday"], { env, cwd: dirs.workspace })
      assert.strictEqual(bad.code, 2)
      assert.include(bad.stderr, "YYYY-MM-DD")
    }))
})
