import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { baton } from "../../src/Cli.js"
import { ProviderKind } from "../../src/domain/Settings.js"
import { allCommands, commandTree } from "../../src/programs/cli/CommandTree.js"
import { helpPage } from "../../src/programs/cli/HelpPage.js"
import { quickAnswer, rootHelp } from "../../src/programs/cli/Help.js"
import { PROVIDER_KINDS } from "../../src/programs/cli/CommonArgs.js"
import { stripAnsi } from "../../src/programs/cli/view/Style.js"
import { VERSION } from "../../src/services/Version.js"
import { ROOT, runCli } from "../support/cliProcess.js"

/** The overview page is hand-written (it needs no Effect at start-up); these keep it true to the CLI. */

const cliSource = Fs.readFileSync(Path.join(ROOT, "src", "Cli.ts"), "utf8")
const page = rootHelp(false)

/** What @effect/cli says of an option or argument when it knows nothing about it. */
const LIBRARY_WORDS = [
  "A user-defined piece of text",
  "A true or false value",
  "An integer.",
  "One of the following:",
  "This setting is optional",
  "An existing file."
]

describe("every command's --help page", () => {
  const commands = allCommands(commandTree(baton.descriptor))

  it("the walk sees every command and option the CLI defines", () => {
    assert.includeMembers(commands.map((c) => c.path.join(" ")), ["run", "chat", "sessions list", "sessions show", "usage", "serve", "web", "demo"])
    assert.isAbove(commands.flatMap((c) => c.options).length, 60)
    const run = commands.find((c) => c.path.join(" ") === "run")!
    assert.deepInclude(run.options.find((o) => o.names[0] === "--image"), { optional: true, repeated: true })
    assert.deepInclude(run.options.find((o) => o.names[0] === "--approve")?.kind, { _tag: "Choice", choices: ["ask", "allow", "deny"] })
  })

  it("every option and argument of every command has a description of its own, shown on its page", () => {
    for (const command of commands) {
      const page = helpPage(command)
      const where = `baton ${command.path.join(" ")}`
      assert.notStrictEqual(command.description, "", `${where} has no description`)
      assert.include(page, `$ baton${command.path.map((p) => ` ${p}`).join("")}`, where)
      for (const item of [...command.options.map((o) => ({ name: o.names[0]!, ...o })), ...command.args]) {
        assert.isAbove(item.description.length, 3, `${where} ${item.name} has no description`)
        for (const words of LIBRARY_WORDS) assert.notInclude(item.description, words, `${where} ${item.name}`)
        assert.include(page.replace(/\s+/g, " "), item.description.replace(/\s+/g, " "), `${where} ${item.name}`)
      }
      for (const words of LIBRARY_WORDS) assert.notInclude(page, words, where)
    }
  })
})

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
      assert.include(run.stdout, "$ baton run [--provider")
      assert.include(run.stdout, "--approve ask|allow|deny")
      // Optional options are bracketed: a repeatable one too.
      assert.include(run.stdout, "[--image FILE]...")
      for (const words of LIBRARY_WORDS) assert.notInclude(run.stdout, words)
      assert.notInclude(run.stdout, "\x1b[")
      const group = yield* runCli(["sessions"])
      assert.strictEqual(group.code, 0)
      assert.include(group.stdout, "baton sessions show")
      const unknown = yield* runCli(["frobnicate"])
      assert.strictEqual(unknown.code, 2)
    }))
})
