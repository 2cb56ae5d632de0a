import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { ProviderKind } from "../../src/domain/Settings.js"
import { quickAnswer, rootHelp } from "../../src/programs/cli/Help.js"
import { PROVIDER_KINDS } from "../../src/programs/cli/CommonArgs.js"
import { stripAnsi } from "../../src/programs/cli/view/Style.js"
import { VERSION } from "../../src/programs/cli/Version.js"
import { ROOT, runCli } from "../support/cliProcess.js"

/** The overview page is hand-written (it needs no Effect at start-up); these keep it true to the CLI. */

const cliSource = Fs.readFileSync(Path.join(ROOT, "src", "Cli.ts"), "utf8")
const page = rootHelp(false)

describe("baton help and version", () => {
  it("the overview names every command and every option src/Cli.ts defines", () => {
    const commands = [...cliSource.matchAll(/Command\.make\(\s*"([a-z]+)"/g)].map((m) => m[1]!).filter((c) => c !== "baton")
    assert.includeMembers(commands, ["run", "chat", "sessions", "list", "show", "export", "replay", "demo"])
    for (const command of commands) assert.match(page, new RegExp(`baton (sessions )?${command}\\b`), command)
    const options = [...cliSource.matchAll(/Options\.(?:text|boolean|choice|integer)\("([a-z-]+)"/g)].map((m) => m[1]!)
    assert.isAbove(options.length, 12)
    for (const option of options) assert.include(page, `--${option}`, option)
  })

  it("the version is package.json's, and the provider list is the domain's", () => {
    const pkg = JSON.parse(Fs.readFileSync(Path.join(ROOT, "package.json"), "utf8")) as { readonly version: string }
    assert.strictEqual(VERSION, pkg.version)
    assert.deepStrictEqual([...PROVIDER_KINDS], [...ProviderKind.literals])
  })

  it("only the bare overview and version requests skip the CLI", () => {
    assert.strictEqual(quickAnswer([]), "help")
    assert.strictEqual(quickAnswer(["-h"]), "help")
    assert.strictEqual(quickAnswer(["--version"]), "version")
    assert.isUndefined(quickAnswer(["run", "--help"]))
    assert.isUndefined(quickAnswer(["run", "--version"]))
    assert.isUndefined(quickAnswer(["--help", "run"]))
  })

  it("colour only when asked for: the page is plain text without it", () => {
    assert.strictEqual(stripAnsi(rootHelp(true)), page)
    assert.notInclude(page, "\x1b[")
  })

  it.scopedLive("the built bin prints them; a command's own help comes from @effect/cli, without escape codes in a pipe", () =>
    Effect.gen(function*() {
      const help = yield* runCli(["--help"])
      assert.deepStrictEqual([help.code, help.stdout], [0, page])
      const bare = yield* runCli([])
      assert.strictEqual(bare.stdout, page)
      const version = yield* runCli(["--version"])
      assert.strictEqual(version.stdout, `${VERSION}\n`)
      const run = yield* runCli(["run", "--help"])
      assert.strictEqual(run.code, 0)
      assert.include(run.stdout, "--approve ask | allow | deny")
      assert.notInclude(run.stdout, "\x1b[")
      const unknown = yield* runCli(["frobnicate"])
      assert.strictEqual(unknown.code, 2)
    }))
})
