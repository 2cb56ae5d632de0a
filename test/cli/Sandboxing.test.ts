import { assert, describe, it } from "@effect/vitest"
import { noCommonArgs } from "../../src/programs/cli/CommonArgs.js"
import type { AppEnv } from "../../src/programs/cli/Env.js"
import { SANDBOX_NOTE, sandboxConfig, sandboxedRules } from "../../src/programs/cli/Sandboxing.js"
import { emptyRules } from "../../src/domain/Settings.js"

/** How the options and settings become the executor's sandbox. */

const env = (over: { sandbox?: AppEnv["settings"]["file"]["sandbox"]; flag?: AppEnv["args"]["sandbox"]; allow?: ReadonlyArray<string>; deny?: ReadonlyArray<string> } = {}): AppEnv => ({
  home: "/h/.baton",
  workspace: "/w",
  instructions: [],
  args: { ...noCommonArgs, sandbox: over.flag },
  settings: {
    file: over.sandbox !== undefined ? { sandbox: over.sandbox } : {},
    rules: { ...emptyRules, allow: over.allow ?? [], deny: over.deny ?? [] },
    sources: [],
    mcpServers: []
  }
})

describe("sandboxConfig", () => {
  it("no mode named: workspace-write as a default that falls back; a named mode is kept; the flag beats the settings", () => {
    const unnamed = sandboxConfig(env())
    assert.deepStrictEqual([unnamed.mode, unnamed.fallback, unnamed.network, unnamed.batonHome], ["workspace-write", true, false, "/h/.baton"])
    const named = sandboxConfig(env({ sandbox: { mode: "read-only", network: true, hidden: ["~/.kube"] } }))
    assert.deepStrictEqual([named.mode, named.fallback, named.network, named.hidden], ["read-only", undefined, true, ["~/.kube"]])
    assert.strictEqual(sandboxConfig(env({ sandbox: { mode: "read-only" }, flag: "off" })).mode, "off")
  })

  it("a workspace .env file is shown only to a rule that names it, never by a plain Read", () => {
    assert.isFalse(sandboxConfig(env({ allow: ["Read"] })).exposed!("/w/.env"))
    const naming = sandboxConfig(env({ allow: ["Read(.env.example)"] }))
    assert.isTrue(naming.exposed!("/w/.env.example"))
    assert.isFalse(naming.exposed!("/w/.env"))
    assert.isFalse(sandboxConfig(env({ allow: ["Read(.env*)"], deny: ["Read(.env)"] })).exposed!("/w/.env"))
  })

  it("chat's ask mode adds Bash(sandboxed) only while the sandbox runs", () => {
    const on = { mode: "workspace-write", network: false, active: true } as const
    assert.deepStrictEqual(sandboxedRules(emptyRules, on).allow, ["Bash(sandboxed)"])
    assert.strictEqual(sandboxedRules(emptyRules, { ...on, active: false, unavailable: "x" }), emptyRules)
    assert.include(SANDBOX_NOTE, "Bash(sandboxed)")
  })
})
