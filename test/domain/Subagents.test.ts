import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import { GENERAL_PURPOSE, offersTool, parseTaskCall, subagentTypes, taskDefinition } from "../../src/domain/Subagents.js"

describe("Subagents", () => {
  const types = subagentTypes({ reviewer: { description: "reviews", prompt: "You review.", tools: ["Read", "mcp__docs"] } })

  it("a type offers its listed tools (an MCP server by its prefix), never Task; no list offers all but Task", () => {
    const reviewer = types["reviewer"]!
    assert.deepStrictEqual(
      ["Read", "Edit", "Task", "mcp__docs__search", "mcp__docsx__search", "mcp__other__x"].map((name) => offersTool(reviewer, name)),
      [true, false, false, true, false, false]
    )
    assert.deepStrictEqual(["Read", "Bash", "Task"].map((name) => offersTool(types[GENERAL_PURPOSE]!, name)), [true, true, false])
  })

  it("Task arguments: the default type, an unknown type naming the known ones, bad JSON", () => {
    const ok = parseTaskCall(JSON.stringify({ description: "d", prompt: "p" }), types)
    assert.isTrue(Either.isRight(ok) && ok.right.name === GENERAL_PURPOSE)
    const unknown = parseTaskCall(JSON.stringify({ description: "d", prompt: "p", subagent_type: "nope" }), types)
    assert.deepStrictEqual(unknown, Either.left(`unknown subagent_type "nope"; known types: general-purpose, reviewer`))
    const bad = parseTaskCall("{not json", types)
    assert.isTrue(Either.isLeft(bad) && bad.left.startsWith("invalid Task arguments"))
    const missing = parseTaskCall(JSON.stringify({ description: "d" }), types)
    assert.isTrue(Either.isLeft(missing) && missing.left.includes("prompt"))
  })

  it("the Task definition lists the types and asks for description and prompt", () => {
    const definition = taskDefinition(types)
    assert.strictEqual(definition.name, "Task")
    assert.include(definition.description, "- reviewer: reviews")
    assert.deepStrictEqual(definition.parameters["required"], ["description", "prompt"])
  })
})
