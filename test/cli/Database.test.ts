import { assert, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs, jsonEvents, runCli, startServe } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { freshSchema, onPostgres } from "../support/pgDatabase.js"
import { byType } from "../support/sessionHarness.js"

/** `--database` / BATON_DATABASE_URL on the built CLI: conversations in PostgreSQL, the URL never shown. */

const listed = (stdout: string) =>
  stdout.trim().split("\n").filter((l) => l !== "").map((line) => JSON.parse(line) as { readonly id: string; readonly workspace?: string })

onPostgres("baton --database (built CLI, PostgreSQL)", () => {
  it.scopedLive("run, then sessions list/show from another home: one database, the home keeps no baton.db", () =>
    Effect.gen(function*() {
      const { url } = yield* freshSchema
      const password = decodeURIComponent(new URL(url).password)
      const model = yield* MockModelServer.make({ replies: [Reply.toolCalls([{ id: "call_1", name: "Read", args: { file_path: "a.txt" } }]), Reply.text("It says alpha."), Reply.text("Still alpha.")] })
      const dirs = yield* cliDirs
      Fs.writeFileSync(Path.join(dirs.workspace, "a.txt"), "alpha\n")
      const env = { ...model.childEnv("openai-chat"), BATON_HOME: dirs.home }
      const run = yield* runCli(["run", "--json", "--approve", "allow", "--database", url, "-w", dirs.workspace, "what is in a.txt?"], { env })
      assert.strictEqual(run.code, 0, run.stderr)
      assert.strictEqual(byType(jsonEvents(run.stdout), "assistant_message").at(-1)?.content, "It says alpha.")
      assert.isFalse(Fs.existsSync(Path.join(dirs.home, "baton.db")), "nothing in the home")

      // Another home, the variable instead of the option: the same conversations.
      const other = { BATON_HOME: Path.join(dirs.root, "elsewhere"), BATON_DATABASE_URL: url }
      const list = yield* runCli(["sessions", "list", "--json"], { env: other })
      assert.strictEqual(list.code, 0, list.stderr)
      const [conversation] = listed(list.stdout)
      assert.strictEqual(conversation?.workspace, dirs.workspace)
      const show = yield* runCli(["sessions", "show", conversation!.id], { env: other })
      assert.strictEqual(show.code, 0, show.stderr)
      assert.include(show.stdout, "It says alpha.")
      // --continue finds it through the database too.
      const again = yield* runCli(["run", "--json", "--continue", "-w", dirs.workspace, "--database", url, "and now?"], { env })
      assert.strictEqual(again.code, 0, again.stderr)
      const relisted = listed((yield* runCli(["sessions", "list", "--json"], { env: other })).stdout)
      assert.deepStrictEqual(relisted.map((c) => c.id), [conversation!.id])
      assert.include((yield* runCli(["sessions", "show", conversation!.id], { env: other })).stdout, "Still alpha.")
      for (const output of [run, list, show, again]) assert.notInclude(output.stdout + output.stderr, password)
    }).pipe(Effect.scoped))

  it.scopedLive("baton serve --database: the banner names the database without its password; a --server client's task lands there", () =>
    Effect.gen(function*() {
      const { url } = yield* freshSchema
      const password = decodeURIComponent(new URL(url).password)
      const model = yield* MockModelServer.make({ replies: [Reply.text("Served.")] })
      const dirs = yield* cliDirs
      const server = yield* startServe(["--home", dirs.home, "--database", url], model.childEnv("openai-chat"))
      const banner = yield* server.stderr
      assert.include(banner, `conversations in postgres://${new URL(url).username}:***@`)
      const client = yield* runCli(["run", "--json", "--server", server.url, "-w", dirs.workspace, "hello"], { env: { BATON_HOME: Path.join(dirs.root, "client") } })
      assert.strictEqual(client.code, 0, client.stderr)
      const list = yield* runCli(["sessions", "list", "--json", "--database", url], { env: { BATON_HOME: Path.join(dirs.root, "reader") } })
      assert.strictEqual(listed(list.stdout).length, 1, list.stderr)
      assert.isFalse(Fs.existsSync(Path.join(dirs.home, "baton.db")))
      yield* server.stop
      assert.strictEqual(yield* server.exited, 130)
      assert.notInclude((yield* server.stderr) + client.stdout + client.stderr, password)
    }).pipe(Effect.scoped))

  it.scopedLive("a wrong password, a server that is down, a URL of another kind: clear errors, no password printed", () =>
    Effect.gen(function*() {
      const { url } = yield* freshSchema
      const dirs = yield* cliDirs
      const env = { BATON_HOME: dirs.home }
      const wrong = new URL(url)
      wrong.password = "hunter2-not-it"
      const refused = yield* runCli(["sessions", "list", "--database", wrong.toString()], { env })
      assert.strictEqual(refused.code, 1)
      assert.match(refused.stderr, /refused the credentials/)
      const down = new URL(url)
      down.port = "1"
      const unreachable = yield* runCli(["serve", "--home", dirs.home, "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--database", down.toString()], { env })
      assert.strictEqual(unreachable.code, 1)
      assert.match(unreachable.stderr, /is not reachable/)
      const mysql = yield* runCli(["sessions", "list", "--database", "mysql://root:hunter2-not-it@db/x"], { env })
      assert.strictEqual(mysql.code, 2)
      assert.match(mysql.stderr, /takes a PostgreSQL URL/)
      const withServer = yield* runCli(["sessions", "list", "--server", "http://127.0.0.1:1"], { env: { ...env, BATON_DATABASE_URL: url } })
      assert.strictEqual(withServer.code, 2)
      assert.match(withServer.stderr, /a --server client keeps no conversations/)
      for (const output of [refused, unreachable, mysql, withServer]) {
        assert.notInclude(output.stdout + output.stderr, "hunter2-not-it")
        assert.notInclude(output.stdout + output.stderr, decodeURIComponent(new URL(url).password))
      }
      assert.isFalse(Fs.existsSync(Path.join(dirs.home, "baton.db")))
    }).pipe(Effect.scoped))
})
