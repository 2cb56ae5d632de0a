import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs, runCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"

/**
 * The CLI's bad-input corpus: wrong settings files and wrong arguments stop the command with exit
 * code 2 and a message naming what is wrong (the file, the field, what was expected), before anything
 * is written: no store file, no conversation, no model request.
 */

interface Case {
  readonly name: string
  readonly args: ReadonlyArray<string>
  /** Written before the command runs: home settings, workspace settings (raw text). */
  readonly home?: string
  readonly workspace?: string
  /** Every one of these must appear on stderr. */
  readonly says: ReadonlyArray<string>
}

const cases: ReadonlyArray<Case> = [
  { name: "home settings not JSON", args: ["run", "hi"], home: "{ \"model\": ", says: ["settings.json", "not valid JSON"] },
  { name: "unknown settings key", args: ["run", "hi"], home: JSON.stringify({ modle: "typo" }), says: ["modle", "unknown key"] },
  { name: "wrong type", args: ["run", "hi"], home: JSON.stringify({ maxTurns: "ten" }), says: ["maxTurns", "expected"] },
  { name: "durability not a choice", args: ["run", "hi"], home: JSON.stringify({ durability: "sometimes" }), says: ["durability", "\"normal\" | \"full\""] },
  { name: "a rule list that is not a list", args: ["run", "hi"], home: JSON.stringify({ permissions: { allow: "Read" } }), says: ["permissions.allow: expected a list of strings, got \"Read\""] },
  { name: "bad workspace settings", args: ["run", "hi"], workspace: JSON.stringify({ compaction: { mode: "shred" } }), says: [".baton", "compaction.mode"] },
  { name: "settings that are not an object", args: ["run", "hi"], home: "[1, 2]", says: ["settings.json", "a JSON object"] },
  { name: "unknown option", args: ["run", "--colour", "hi"], says: ["unknown option --colour"] },
  { name: "max-turns not a number", args: ["run", "--max-turns", "many", "hi"], says: ["many"] },
  { name: "approve not a choice", args: ["run", "--approve", "maybe", "hi"], says: ["ask, allow, deny"] },
  { name: "no prompt", args: ["run"], says: ["prompt"] },
  { name: "unknown provider", args: ["run", "--provider", "clippy", "hi"], says: ["openai-chat", "anthropic"] },
  { name: "port not a number", args: ["serve", "--port", "eighty"], says: ["eighty"] },
  { name: "empty conversation id", args: ["run", "--conversation", " ", "hi"], says: ["--conversation"] },
  { name: "unknown conversation", args: ["run", "--conversation", "conv-nope", "hi"], says: ["conv-nope"] }
]

describe("baton: the bad-input corpus of settings and arguments", () => {
  for (const c of cases) {
    it.scopedLive(`${c.name}: exit 2, says what is wrong, writes nothing`, () =>
      Effect.gen(function*() {
        const model = yield* MockModelServer.make()
        const dirs = yield* cliDirs
        if (c.home !== undefined) Fs.writeFileSync(Path.join(dirs.home, "settings.json"), c.home)
        if (c.workspace !== undefined) {
          Fs.mkdirSync(Path.join(dirs.workspace, ".baton"))
          Fs.writeFileSync(Path.join(dirs.workspace, ".baton", "settings.json"), c.workspace)
        }
        const result = yield* runCli([...c.args, "--home", dirs.home, "--workspace", dirs.workspace], {
          env: model.childEnv("openai-chat"),
          cwd: dirs.workspace
        })
        assert.strictEqual(result.code, 2, `${c.name}: ${result.stderr}`)
        for (const text of c.says) assert.include(result.stderr, text, c.name)
        assert.strictEqual(result.stdout, "", "nothing on stdout")
        assert.strictEqual((yield* model.requests).length, 0, "no model request")
        // The store may have been opened (an unknown conversation is looked up), but holds nothing.
        const entries = Fs.readdirSync(dirs.home).filter((f) => f !== "settings.json")
        if (c.name !== "unknown conversation") assert.deepStrictEqual(entries, [], `${c.name} wrote ${entries.join(", ")}`)
        else {
          const listed = yield* runCli(["sessions", "list", "--json", "--home", dirs.home], {})
          assert.deepStrictEqual(JSON.parse(listed.stdout || "[]"), [])
        }
      }))
  }
})

/**
 * Usage errors: one line, `baton: ` then the option or argument, what it expects and what it got,
 * and where its help is; exit code 2. The parser's own words ("'abc' is not a integer") never show.
 */
const usageErrors: ReadonlyArray<{ readonly args: ReadonlyArray<string>; readonly line: string }> = [
  { args: ["usage", "--bogus"], line: "baton: unknown option --bogus for `baton usage`; see `baton usage --help`" },
  { args: ["sessions", "list", "extra"], line: "baton: unexpected argument 'extra' (`baton sessions list` takes no arguments); see `baton sessions list --help`" },
  { args: ["run", "--approve", "maybe", "hi"], line: "baton: --approve expects one of ask, allow, deny, got 'maybe'; see `baton run --help`" },
  { args: ["run", "--max-turns", "abc", "hi"], line: "baton: --max-turns expects a whole number, got 'abc'; see `baton run --help`" },
  { args: ["run", "--max-turns", "0", "hi"], line: "baton: --max-turns expects a whole number of at least 1, got '0'; see `baton run --help`" },
  { args: ["run", "--max-turns", "-1", "hi"], line: "baton: --max-turns expects a whole number of at least 1, got '-1'; see `baton run --help`" },
  { args: ["sessions", "show"], line: "baton: `baton sessions show` needs <id> (a conversation id), got nothing; see `baton sessions show --help`" },
  { args: ["serve", "--port", "eighty"], line: "baton: --port expects a whole number, got 'eighty'; see `baton serve --help`" },
  { args: ["sessions", "lst"], line: "baton: unknown command 'lst' for `baton sessions` (one of list, show, export, fork); see `baton sessions --help`" },
  { args: ["replay", "no-such.jsonl"], line: "baton: <cassette> expects an existing file, got 'no-such.jsonl' (not found); see `baton replay --help`" }
]

describe("baton: usage errors are one line naming the option, exit 2", () => {
  for (const c of usageErrors) {
    it.scopedLive(`baton ${c.args.join(" ")}`, () =>
      Effect.gen(function*() {
        const model = yield* MockModelServer.make()
        const dirs = yield* cliDirs
        const result = yield* runCli(c.args, { env: { ...model.childEnv("openai-chat"), BATON_HOME: dirs.home }, cwd: dirs.workspace })
        assert.strictEqual(result.code, 2, result.stderr)
        assert.strictEqual(result.stderr, `${c.line}\n`)
        assert.strictEqual(result.stdout, "")
        assert.strictEqual((yield* model.requests).length, 0, "no model request, no tool")
      }))
  }
})

describe("baton: commands that read conversations", () => {
  it.scopedLive("a home that does not exist is said, not created (exit 2)", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const missing = Path.join(dirs.home, "typo")
      for (const args of [["sessions", "list"], ["sessions", "show", "conv-x"], ["usage"]]) {
        const result = yield* runCli([...args, "--home", missing], {})
        assert.strictEqual(result.code, 2, `${args.join(" ")}: ${result.stderr}`)
        assert.strictEqual(result.stderr, `baton: no Baton home at ${missing}: nothing has run there (--home or BATON_HOME names the directory holding baton.db)\n`)
        assert.isFalse(Fs.existsSync(missing), `${args.join(" ")} created the home`)
      }
    }))

  it.scopedLive("an unknown conversation id exits 2 in every command that takes one", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      yield* runCli(["sessions", "list", "--home", dirs.home], {}) // an empty store
      for (const args of [["sessions", "show", "conv-nope"], ["sessions", "fork", "conv-nope"], ["sessions", "export", "conv-nope"], ["usage", "--conversation", "conv-nope"]]) {
        const result = yield* runCli([...args, "--home", dirs.home], {})
        assert.strictEqual(result.code, 2, `${args.join(" ")}: ${result.stderr}`)
        assert.include(result.stderr, "conv-nope", args.join(" "))
        assert.strictEqual(result.stdout, "", args.join(" "))
      }
    }))
})
