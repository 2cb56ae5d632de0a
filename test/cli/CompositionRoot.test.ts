import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Provider } from "../../src/services/Provider.js"
import { noCommonArgs } from "../../src/programs/cli/CommonArgs.js"
import { freshEnv } from "../../src/programs/cli/Env.js"
import * as Layers from "../../src/programs/cli/Layers.js"
import { emptyRules } from "../../src/domain/Settings.js"
import { openDatabase } from "../../src/services/store/sqlite/Open.js"
import { ROOT } from "../support/cliProcess.js"
import { tempDir } from "../support/tempDir.js"

/**
 * One composition root: Layers.ts builds every layer of the CLI, Commands.ts provides them, the
 * command programs only name what they need; and the process is reached through Io alone.
 */

const sources = (dir: string): ReadonlyArray<string> =>
  Fs.readdirSync(Path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(Path.join(dir, entry.name)) : entry.name.endsWith(".ts") ? [Path.join(dir, entry.name)] : []
  )

const code = (file: string) => Fs.readFileSync(Path.join(ROOT, file), "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "")

const cli = Path.join("src", "programs", "cli")
const programs = [...sources(cli), ...sources(Path.join("src", "programs", "server"))]

describe("the CLI's composition root", () => {
  it("only Layers.ts makes layers and only Commands.ts provides them (and ClusterRunner.ts, a cluster runner's wiring, and Platform.ts, what the process runs in); only Io.ts touches the process", () => {
    const makesLayers = programs.filter((file) => file.startsWith(cli) && /^import \* as Layer from "effect\/Layer"/m.test(code(file)))
    assert.deepStrictEqual(makesLayers, [Path.join(cli, "Layers.ts")])
    const provides = programs.filter((file) => file.startsWith(cli) && /\b(Effect|Layer)\.provide(Merge)?\(/.test(code(file)))
    assert.deepStrictEqual(provides.sort(), [Path.join(cli, "ClusterRunner.ts"), Path.join(cli, "Commands.ts"), Path.join(cli, "Layers.ts"), Path.join(cli, "Platform.ts")])
    const touchesProcess = programs.filter((file) => /\bprocess\./.test(code(file)))
    assert.deepStrictEqual(touchesProcess, [Path.join(cli, "Io.ts")])
  })

  it.effect("with --server the model is the server's: named so, and a model call here is a bug", () =>
    Effect.gen(function*() {
      const env = freshEnv({ home: "/nowhere", workspace: "/nowhere" }, { ...noCommonArgs, server: "http://127.0.0.1:1" })
      const model = yield* Layers.model(env)
      assert.strictEqual(model.describe, "the server at http://127.0.0.1:1")
      const error = yield* Effect.flip(Effect.flatMap(Provider, (p) => Stream.runDrain(p.stream({ system: "", history: [], tools: [] }))).pipe(Effect.provide(model.layer)))
      assert.strictEqual(error._tag, "ProviderInvalidRequest")
      assert.include(error.message, "makes no model calls")
    }))

  it.scoped("settings `durability`: normal by default (synchronous=NORMAL), `full` opens the store with synchronous=FULL", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const env = (durability?: "normal" | "full") => ({
        ...freshEnv({ home: dir, workspace: dir }, noCommonArgs),
        settings: { file: durability === undefined ? {} : { durability }, rules: emptyRules, sources: [], mcpServers: [] }
      })
      const synchronous = (options: ReturnType<typeof Layers.storeOptions>) =>
        Effect.scoped(Effect.flatMap(openDatabase(options), (sql) => Effect.map(sql<{ synchronous: number }>`PRAGMA synchronous`, ([row]) => row?.synchronous)))
      assert.strictEqual(yield* synchronous(Layers.storeOptions(env())), 1)
      assert.strictEqual(yield* synchronous(Layers.storeOptions(env("normal"))), 1)
      assert.strictEqual(yield* synchronous(Layers.storeOptions(env("full"))), 2)
    }))
})
