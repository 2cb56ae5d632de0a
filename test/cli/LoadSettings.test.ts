import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { loadSettings, mergeSettings, readableType } from "../../src/programs/cli/LoadSettings.js"
import { tempDir } from "../support/tempDir.js"

/** Settings files: `$BATON_HOME/settings.json` then `<workspace>/.baton/settings.json`. */

const write = (file: string, value: unknown) => {
  Fs.mkdirSync(Path.dirname(file), { recursive: true })
  Fs.writeFileSync(file, typeof value === "string" ? value : JSON.stringify(value))
}

const dirs = Effect.map(tempDir, (root) => ({ home: Path.join(root, "home"), workspace: Path.join(root, "ws") }))

describe("loadSettings", () => {
  it.scoped("no files: no settings, no rules", () =>
    Effect.gen(function*() {
      const { home, workspace } = yield* dirs
      const loaded = yield* loadSettings(home, workspace)
      assert.deepStrictEqual(loaded, { file: {}, rules: { allow: [], ask: [], deny: [], additionalDirectories: [] }, sources: [], mcpServers: [] })
    }))

  it.scoped("the workspace file wins for values; rule lists add up, so a project cannot drop the user's deny rule", () =>
    Effect.gen(function*() {
      const { home, workspace } = yield* dirs
      write(Path.join(home, "settings.json"), {
        model: "m-home",
        maxTurns: 5,
        compaction: { maxContextLength: 1000, mode: "discard" },
        permissions: { deny: ["Bash(rm:*)"], allow: ["Read"] }
      })
      write(Path.join(workspace, ".baton", "settings.json"), {
        model: "m-ws",
        compaction: { mode: "summarize" },
        permissions: { allow: ["Read", "Bash(npm test)"], deny: [] }
      })
      const loaded = yield* loadSettings(home, workspace)
      assert.deepStrictEqual(loaded.file, { model: "m-ws", maxTurns: 5, compaction: { maxContextLength: 1000, mode: "summarize" } })
      const { sources, ...rules } = loaded.rules
      assert.deepStrictEqual(rules, { allow: ["Read", "Bash(npm test)"], ask: [], deny: ["Bash(rm:*)"], additionalDirectories: [] })
      // Each rule names the file it is written in (the first that has it): a denial says where.
      assert.deepStrictEqual(sources, { "Bash(rm:*)": Path.join(home, "settings.json"), Read: Path.join(home, "settings.json"), "Bash(npm test)": ".baton/settings.json" })
      assert.strictEqual(loaded.sources.length, 2)
    }))

  it.scoped("an invalid file is a ConfigError naming the file, every bad field and what it expects", () =>
    Effect.gen(function*() {
      const { home, workspace } = yield* dirs
      const file = Path.join(workspace, ".baton", "settings.json")
      write(file, { provider: "openai", permissions: { allow: ["Read", 7] }, compaction: { mode: "fold" }, extra: true })
      const error = yield* Effect.flip(loadSettings(home, workspace))
      assert.strictEqual(error._tag, "ConfigError")
      assert.strictEqual(error.source, file)
      assert.include(error.message, file)
      assert.include(error.message, `provider: expected "openai-chat" | "anthropic" | "openai-responses" | "replay", got "openai"`)
      assert.include(error.message, "permissions.allow[1]: expected a string, got 7")
      assert.include(error.message, `compaction.mode: expected "summarize" | "discard" | "sliding_window", got "fold"`)
      assert.include(error.message, "extra: unknown key")
    }))

  it("types are named as a person writing JSON reads them, never as TypeScript", () => {
    assert.strictEqual(readableType("ReadonlyArray<string>"), "a list of strings")
    assert.strictEqual(readableType("ReadonlyArray<ReadonlyArray<number>>"), "a list of a list of numbers")
    assert.strictEqual(readableType("{ readonly command: string }"), "an object")
    assert.strictEqual(readableType("Int"), "a whole number")
    assert.strictEqual(readableType("boolean"), "true or false")
    assert.strictEqual(readableType("\"full\""), "\"full\"")
  })

  it.scoped("agents: a later file's type replaces an earlier one by name; an unknown or missing key is an error naming the field", () =>
    Effect.gen(function*() {
      const { home, workspace } = yield* dirs
      write(Path.join(home, "settings.json"), {
        agents: { reviewer: { description: "home", prompt: "p1" }, scout: { description: "s", prompt: "p2", tools: ["Read"] } }
      })
      write(Path.join(workspace, ".baton", "settings.json"), { agents: { reviewer: { description: "ws", prompt: "p3", model: "m" } } })
      const loaded = yield* loadSettings(home, workspace)
      assert.deepStrictEqual(loaded.file.agents, {
        reviewer: { description: "ws", prompt: "p3", model: "m" },
        scout: { description: "s", prompt: "p2", tools: ["Read"] }
      })
      const file = Path.join(workspace, ".baton", "settings.json")
      write(file, { agents: { reviewer: { description: "d", prompt: "p", tool: ["Read"] }, lazy: { description: "no prompt" } } })
      const error = yield* Effect.flip(loadSettings(home, workspace))
      assert.strictEqual(error.source, file)
      assert.include(error.message, "agents.reviewer.tool: unknown key")
      assert.include(error.message, "agents.lazy.prompt")
    }))

  it.scoped("not JSON, or not an object", () =>
    Effect.gen(function*() {
      const { home, workspace } = yield* dirs
      write(Path.join(home, "settings.json"), "{ model: x }")
      assert.include((yield* Effect.flip(loadSettings(home, workspace))).message, "is not valid JSON")
      write(Path.join(home, "settings.json"), "[]")
      const error = yield* Effect.flip(loadSettings(home, workspace))
      assert.strictEqual(error.field, "(root)")
      assert.include(error.message, "(root): expected a JSON object, got []")
    }))
})

describe("loadSettings: sandbox", () => {
  it.scoped("the later file's mode and network win, writable and hidden add up; an unknown key or mode names the field", () =>
    Effect.gen(function*() {
      const { home, workspace } = yield* dirs
      write(Path.join(home, "settings.json"), { sandbox: { mode: "read-only", writable: ["~/cache"], hidden: ["~/.kube"] } })
      write(Path.join(workspace, ".baton", "settings.json"), { sandbox: { mode: "workspace-write", network: true, hidden: [".secrets"] } })
      const loaded = yield* loadSettings(home, workspace)
      assert.deepStrictEqual(loaded.file.sandbox, { mode: "workspace-write", network: true, writable: ["~/cache"], hidden: ["~/.kube", ".secrets"] })
      write(Path.join(workspace, ".baton", "settings.json"), { sandbox: { mode: "strict", netwrk: true } })
      const error = yield* Effect.flip(loadSettings(home, workspace))
      assert.include(error.message, `sandbox.mode: expected "workspace-write" | "read-only" | "off", got "strict"`)
      assert.include(error.message, "sandbox.netwrk: unknown key")
    }))
})

describe("loadSettings: MCP servers", () => {
  it.scoped("from the user's settings, the workspace's .mcp.json and its .baton/settings.json; a later entry replaces an earlier one", () =>
    Effect.gen(function*() {
      const { home, workspace } = yield* dirs
      write(Path.join(home, "settings.json"), { mcpServers: { a: { command: "a-home" }, b: { command: "b-home" } }, mcpToolTimeoutMs: 1000 })
      write(Path.join(workspace, ".mcp.json"), { mcpServers: { b: { type: "http", url: "https://b.example/mcp" }, c: { command: "c" } } })
      write(Path.join(workspace, ".baton", "settings.json"), { mcpServers: { c: { command: "c-ws", readOnly: true } } })
      const loaded = yield* loadSettings(home, workspace)
      assert.deepStrictEqual(loaded.mcpServers, [
        { key: "a", entry: { command: "a-home" }, source: Path.join(home, "settings.json") },
        { key: "b", entry: { type: "http", url: "https://b.example/mcp" }, source: Path.join(workspace, ".mcp.json") },
        { key: "c", entry: { command: "c-ws", readOnly: true }, source: Path.join(workspace, ".baton", "settings.json") }
      ])
      assert.deepStrictEqual(loaded.file, { mcpToolTimeoutMs: 1000 })
      assert.strictEqual(loaded.sources.length, 3)
    }))

  it.scoped("an invalid entry names the file and the field; .mcp.json holds only mcpServers", () =>
    Effect.gen(function*() {
      const { home, workspace } = yield* dirs
      const file = Path.join(workspace, ".mcp.json")
      write(file, { mcpServers: { gh: { type: "http", url: "https://x", header: {} } } })
      const error = yield* Effect.flip(loadSettings(home, workspace))
      assert.strictEqual(error.source, file)
      assert.include(error.message, file)
      assert.include(error.message, "mcpServers.gh.header: unknown key")
      write(file, { mcpServers: { gh: { command: "x" } }, model: "m" })
      assert.include((yield* Effect.flip(loadSettings(home, workspace))).message, "model: unknown key")
      write(file, { mcpServers: { "a__b": { command: "x" } } })
      const badName = yield* Effect.flip(loadSettings(home, workspace))
      assert.strictEqual(badName.field, "mcpServers.a__b")
      assert.include(badName.message, "mcpServers.a__b: a server name may not start or end with \"_\" nor contain \"__\"")
    }))

  it.scoped("two names that sanitise to one are refused, naming both files", () =>
    Effect.gen(function*() {
      const { home, workspace } = yield* dirs
      write(Path.join(home, "settings.json"), { mcpServers: { "my.server": { command: "x" } } })
      write(Path.join(workspace, ".mcp.json"), { mcpServers: { my_server: { command: "y" } } })
      const error = yield* Effect.flip(loadSettings(home, workspace))
      assert.strictEqual(error.field, "mcpServers.my_server")
      assert.include(error.message, "would both offer their tools as mcp__my_server__…")
      assert.include(error.message, Path.join(home, "settings.json"))
    }))
})

describe("mergeSettings", () => {
  it("keeps one copy of a rule two files both name", () => {
    const merged = mergeSettings([{ permissions: { allow: ["Read"] } }, { permissions: { allow: ["Read", "LS"] } }])
    assert.deepStrictEqual(merged.rules.allow, ["Read", "LS"])
  })
})
