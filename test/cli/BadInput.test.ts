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
  { name: "a rule list that is not a list", args: ["run", "hi"], home: JSON.stringify({ permissions: { allow: "Read" } }), says: ["permissions.allow"] },
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
