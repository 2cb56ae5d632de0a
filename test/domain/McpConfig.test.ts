import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { expandVariables, McpFile, resolveServer, scrub } from "../../src/domain/McpConfig.js"

const env = (vars: Record<string, string>) => (name: string) => vars[name]

describe("MCP server configuration", () => {
  it("${VAR} and ${VAR:-default} expand; an unset variable without a default is named", () => {
    assert.deepStrictEqual(expandVariables("Bearer ${TOKEN}", env({ TOKEN: "abc" })), Either.right({ text: "Bearer abc", values: ["abc"] }))
    assert.deepStrictEqual(Either.map(expandVariables("${PORT:-8080}", env({})), (e) => e.text), Either.right("8080"))
    assert.deepStrictEqual(expandVariables("${A}${B}", env({ A: "1" })), Either.left("B"))
    assert.deepStrictEqual(Either.map(expandVariables("$HOME and $${X", env({})), (e) => e.text), Either.right("$HOME and $${X"))
  })

  it("a stdio entry: every field expanded, cwd relative to the workspace, secrets remembered", () => {
    const config = resolveServer("my.server", {
      command: "${BIN:-node}",
      args: ["--token", "${TOKEN}"],
      env: { API_KEY: "${TOKEN}" },
      cwd: "tools"
    }, "/ws/.mcp.json", "/ws", env({ TOKEN: "s3cret-value" }))
    assert.strictEqual(config.name, "my_server")
    assert.strictEqual(config.key, "my.server")
    assert.strictEqual(config.transport, "stdio")
    assert.isFalse(config.readOnly)
    assert.deepStrictEqual(config.launch, Either.right({
      _tag: "Stdio" as const,
      command: "node",
      args: ["--token", "s3cret-value"],
      env: { API_KEY: "s3cret-value" },
      cwd: "/ws/tools"
    }))
    assert.deepStrictEqual(config.secrets, ["s3cret-value"])
    assert.strictEqual(scrub("401 for s3cret-value", config.secrets), "401 for ***")
  })

  it("a remote entry with a missing variable cannot start, and says why", () => {
    const config = resolveServer("gh", { type: "http", url: "https://x/mcp", headers: { Authorization: "Bearer ${GH_TOKEN}" }, readOnly: true }, "f", "/ws", env({}))
    assert.strictEqual(config.transport, "http")
    assert.isTrue(config.readOnly)
    assert.deepStrictEqual(config.launch, Either.left("needs the environment variable GH_TOKEN, which is not set (write ${GH_TOKEN:-default} for a default)"))
  })

  it(".mcp.json decodes strictly: unknown keys, a remote entry without url, and bad names are errors", () => {
    const decode = Schema.decodeUnknownEither(McpFile, { errors: "all" })
    assert.isTrue(Either.isRight(decode({ mcpServers: { a: { command: "x" }, b: { type: "sse", url: "http://h/sse" } } })))
    assert.isTrue(Either.isLeft(decode({ mcpServers: { a: { command: "x", autoApprove: [] } } })))
    assert.isTrue(Either.isLeft(decode({ mcpServers: { a: { type: "http" } } })))
    assert.isTrue(Either.isLeft(decode({ servers: {} })))
  })
})
