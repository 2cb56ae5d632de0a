import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import * as Path from "node:path"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { makeTool, type Tool } from "../../src/services/tools/Tool.js"
import { toolCall } from "../support/Calls.js"
import { tempDir } from "../support/tempDir.js"
import { executeBatch, workspaceHarness } from "../support/Workspace.js"

const runOne = (tools: ReadonlyArray<Tool>, name: string, args: unknown, outputChars?: number) =>
  Effect.gen(function*() {
    const workspace = yield* tempDir
    const executor = yield* makeToolExecutor({ workspace, tools, ...(outputChars ? { limits: { outputChars } } : {}) })
    const batch = yield* executeBatch(executor, [toolCall("c1", name, args)])
    return (yield* batch.results)[0]!
  })

describe("ToolExecutor", () => {
  it.scoped("definitions: the built-in tools with JSON Schemas made from their Schemas", () =>
    Effect.gen(function*() {
      const { executor } = yield* workspaceHarness()
      const definitions = yield* executor.definitions
      assert.deepStrictEqual(definitions.map((d) => d.name), ["Read", "Write", "Edit", "Bash", "Grep", "Glob", "LS"])
      assert.strictEqual(yield* executor.definitions, definitions, "the same array while nothing changes")
      const edit = definitions.find((d) => d.name === "Edit")!
      assert.deepStrictEqual(edit.parameters.required, ["file_path", "old_string", "new_string"])
      assert.strictEqual(edit.parameters.additionalProperties, false)
      assert.isUndefined(edit.parameters.$schema)
      const bash = definitions.find((d) => d.name === "Bash")!
      assert.deepStrictEqual((bash.parameters.properties as Record<string, Record<string, unknown>>).timeout!.maximum, 600_000)
    }))

  it.scoped("an unknown tool is an error result listing the available tools", () =>
    Effect.gen(function*() {
      const { run } = yield* workspaceHarness()
      const result = yield* run("Delete", { file_path: "a" })
      assert.deepStrictEqual([result.status, result.output], [
        "error",
        "Unknown tool \"Delete\". Available tools: Read, Write, Edit, Bash, Grep, Glob, LS"
      ])
    }))

  it.scoped("malformed JSON and wrong types are error results that say what was wrong", () =>
    Effect.gen(function*() {
      const { run } = yield* workspaceHarness()
      const notJson = yield* run("Edit", "{\"file_path\": \"a\",")
      assert.strictEqual(notJson.status, "error")
      assert.match(notJson.output, /^Invalid arguments for Edit: they are not valid JSON \(.+\)/)
      const notObject = yield* run("Edit", "[1, 2]")
      assert.include(notObject.output, "Invalid arguments for Edit:")
      const wrongTypes = yield* run("Edit", { file_path: "a", old_string: 1, new_string: "b", replace_all: "yes" })
      assert.strictEqual(
        wrongTypes.output,
        "Invalid arguments for Edit: old_string: Expected string, actual 1; replace_all: Expected boolean, actual \"yes\""
      )
    }))

  it.scoped("every built-in tool names the bad field in its error", () =>
    Effect.gen(function*() {
      const { run } = yield* workspaceHarness()
      const cases: ReadonlyArray<readonly [string, unknown, string]> = [
        ["Read", {}, "file_path: is missing"],
        ["Write", { file_path: "a" }, "content: is missing"],
        ["Edit", { file_path: "a", old_string: "x", new_string: "y", replace_all: 1 }, "replace_all: Expected boolean, actual 1"],
        ["Bash", { command: "ls", timeout: "5s" }, "timeout: Expected number, actual \"5s\""],
        ["Grep", { path: "src" }, "pattern: is missing"],
        ["Glob", { pattern: "*", recursive: true }, "recursive: is unexpected, expected: \"pattern\" | \"path\""],
        ["LS", { ignore: "*.log" }, "ignore: Expected Glob patterns of names to leave out, e.g. [\"*.log\"], actual \"*.log\""]
      ]
      for (const [tool, args, expected] of cases) {
        const result = yield* run(tool, args)
        assert.strictEqual(result.status, "error", tool)
        assert.strictEqual(result.output, `Invalid arguments for ${tool}: ${expected}`)
      }
    }))

  it.scoped("output over the limit is cut with a note saying how much and how to read the rest", () =>
    Effect.gen(function*() {
      const chatty = makeTool({
        name: "Chatty",
        description: "prints a lot",
        parameters: Schema.Struct({}),
        truncationHint: "ask for less",
        run: () => Effect.succeed("z".repeat(100_000))
      })
      const result = yield* runOne([chatty], "Chatty", {}, 1_000)
      assert.strictEqual(result.status, "success")
      assert.strictEqual(result.output, `${"z".repeat(1_000)}\n[output truncated: 99000 of 100000 characters omitted; ask for less]`)
    }))

  it.scoped("a tool that throws becomes an error result, not a crash", () =>
    Effect.gen(function*() {
      const broken = makeTool({
        name: "Broken",
        description: "has a bug",
        parameters: Schema.Struct({}),
        run: () => Effect.sync(() => JSON.parse("{"))
      })
      const result = yield* runOne([broken], "Broken", {})
      assert.strictEqual(result.status, "error")
      assert.include(result.output, "Broken failed unexpectedly")
    }))

  it.effect("a workspace that does not exist is a ConfigError", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(makeToolExecutor({ workspace: Path.join("/nonexistent", "ws") }))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) assert.include(String(exit.cause), "ConfigError")
    }))

  it.scoped("an empty batch yields nothing", () =>
    Effect.gen(function*() {
      const { executor } = yield* workspaceHarness()
      const batch = yield* executeBatch(executor, [])
      assert.deepStrictEqual(yield* batch.results, [])
    }))
})
