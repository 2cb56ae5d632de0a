import { assert, describe, it } from "@effect/vitest"
import { mcpToolName, nameTools, ruleNamesTool, sanitizeName, serverNameProblem, serverOfToolName } from "../../src/domain/McpNames.js"

describe("MCP tool names", () => {
  it("mcp__<server>__<tool> in the characters providers accept", () => {
    assert.strictEqual(mcpToolName("fixture", "echo"), "mcp__fixture__echo")
    assert.strictEqual(mcpToolName("gh", "repos.list files"), "mcp__gh__repos_list_files")
    assert.strictEqual(sanitizeName("my.server"), "my_server")
    for (const name of [mcpToolName("s", "ünïcødé/tool"), mcpToolName("server", "x".repeat(200))]) {
      assert.match(name, /^[A-Za-z0-9_-]{1,64}$/)
    }
  })

  it("past 64 characters the tail is a hash, so two long names stay apart", () => {
    const a = mcpToolName("server", `${"x".repeat(80)}a`)
    const b = mcpToolName("server", `${"x".repeat(80)}b`)
    assert.lengthOf(a, 64)
    assert.notStrictEqual(a, b)
    assert.isTrue(a.startsWith("mcp__server__xxx"))
    assert.strictEqual(serverOfToolName(a), "server")
  })

  it("server names: no __, no _ at either end, at most 40 characters", () => {
    assert.isUndefined(serverNameProblem("my_server-2"))
    for (const bad of ["", "a__b", "_a", "a_", "x".repeat(41)]) assert.isString(serverNameProblem(bad), bad)
  })

  it("the server of a tool name, and which rules name a tool", () => {
    assert.strictEqual(serverOfToolName("mcp__my_srv__tool"), "my_srv")
    assert.strictEqual(serverOfToolName("mcp__a___x"), "a")
    assert.isUndefined(serverOfToolName("Read"))
    assert.isTrue(ruleNamesTool("mcp__my_srv", "mcp__my_srv__tool"))
    assert.isFalse(ruleNamesTool("mcp__my", "mcp__my_srv__tool"))
    assert.isFalse(ruleNamesTool("Read", "ReadMore"))
    assert.isFalse(ruleNamesTool("mcp__a__b", "mcp__a__b__c"))
  })

  it("tools that collide once sanitised are all refused, with a message naming them", () => {
    const { offered, refused } = nameTools("s", [{ name: "a.b" }, { name: "ok" }, { name: "a_b" }, { name: "dup" }, { name: "dup" }])
    assert.deepStrictEqual(offered.map((t) => t.name), ["mcp__s__ok"])
    assert.deepStrictEqual(refused.map((r) => [r.name, r.tools]), [["mcp__s__a_b", ["a.b", "a_b"]], ["mcp__s__dup", ["dup", "dup"]]])
    assert.include(refused[0]!.message, "\"a.b\" and \"a_b\" would all be offered as mcp__s__a_b; none of them is offered")
  })
})
