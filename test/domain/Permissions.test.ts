import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import { classify, type CompiledRules, grantFor, parseRule, parseRules, type Rule } from "../../src/domain/Permissions.js"
import { emptyRules } from "../../src/domain/Settings.js"
import { splitCommand } from "../../src/domain/ShellCommand.js"

const ws = "/work/project"
const compile = (rules: Partial<{ allow: Array<string>; ask: Array<string>; deny: Array<string> }>): CompiledRules =>
  Either.getOrThrow(parseRules({ ...emptyRules, ...rules }))
const bash = (command: string) => ({ name: "Bash", arguments: JSON.stringify({ command }) })
const edit = (file_path: string) => ({ name: "Edit", arguments: JSON.stringify({ file_path, old_string: "a", new_string: "b" }) })
const verdict = (call: { name: string; arguments: string }, rules: CompiledRules, grants: ReadonlyArray<Rule> = []) =>
  classify(call, rules, grants, ws).verdict

describe("parseRule", () => {
  it("accepts the three forms and rejects malformed rules", () => {
    assert.deepStrictEqual(Either.getOrThrow(parseRule("Read")), { text: "Read", tool: "Read", specifier: undefined })
    assert.deepStrictEqual(Either.getOrThrow(parseRule("Bash(git status:*)")).specifier, "git status:*")
    assert.deepStrictEqual(Either.getOrThrow(parseRule("Edit(src/**)")).specifier, "src/**")
    for (const bad of ["Bash(", "Bash()", "(x)", "", "Bash(git) extra"]) {
      assert.isTrue(Either.isLeft(parseRule(bad)), bad)
    }
    const error = parseRules({ ...emptyRules, deny: ["Bash(rm -rf:*)", "Bash("] })
    assert.isTrue(Either.isLeft(error))
  })
})

describe("classify", () => {
  it("tool-wide rules", () => {
    const rules = compile({ allow: ["Read", "Grep"] })
    assert.strictEqual(verdict({ name: "Read", arguments: "{\"file_path\":\"a.ts\"}" }, rules), "allow")
    assert.strictEqual(verdict({ name: "Write", arguments: "{}" }, rules), "ask")
  })

  it("unknown tools and unmatched calls ask", () => {
    assert.deepStrictEqual(classify({ name: "Teleport", arguments: "{}" }, compile({ allow: ["Read"] }), [], ws), {
      verdict: "ask",
      source: "default"
    })
  })

  it("deny > ask > allow", () => {
    const rules = compile({ allow: ["Bash"], ask: ["Bash(git push:*)"], deny: ["Bash(rm -rf:*)"] })
    assert.strictEqual(verdict(bash("ls"), rules), "allow")
    assert.strictEqual(verdict(bash("git push origin main"), rules), "ask")
    assert.strictEqual(verdict(bash("rm -rf /"), rules), "deny")
    const both = compile({ ask: ["Read"], allow: ["Read"], deny: ["Read(.env)"] })
    assert.strictEqual(verdict({ name: "Read", arguments: "{\"file_path\":\".env\"}" }, both), "deny")
    assert.strictEqual(verdict({ name: "Read", arguments: "{\"file_path\":\"a\"}" }, both), "ask")
  })

  it("Bash prefix rules match whole words only", () => {
    const rules = compile({ allow: ["Bash(git:*)", "Bash(git status:*)"] })
    assert.strictEqual(verdict(bash("git"), rules), "allow")
    assert.strictEqual(verdict(bash("git log --oneline"), rules), "allow")
    assert.strictEqual(verdict(bash("gitx"), rules), "ask")
    assert.strictEqual(verdict(bash("gitx status"), rules), "ask")
    const status = compile({ allow: ["Bash(git status:*)"] })
    assert.strictEqual(verdict(bash("git   status  -s"), status), "allow")
    assert.strictEqual(verdict(bash("git statusx"), status), "ask")
  })

  it("Bash exact rules match only that command", () => {
    const rules = compile({ allow: ["Bash(npm test)"] })
    assert.strictEqual(verdict(bash("npm test"), rules), "allow")
    assert.strictEqual(verdict(bash("npm test --watch"), rules), "ask")
  })

  it("compound commands need every part allowed", () => {
    const rules = compile({ allow: ["Bash(git status:*)", "Bash(ls:*)"] })
    assert.strictEqual(verdict(bash("git status; rm -rf /"), rules), "ask")
    assert.strictEqual(verdict(bash("git status && rm -rf /"), rules), "ask")
    assert.strictEqual(verdict(bash("git status | sh"), rules), "ask")
    assert.strictEqual(verdict(bash("git status\nrm -rf /"), rules), "ask")
    assert.strictEqual(verdict(bash("git status & rm -rf /"), rules), "ask")
    assert.strictEqual(verdict(bash("git status && ls -la"), rules), "allow")
    assert.strictEqual(verdict(bash("git status 2>&1"), rules), "allow")
  })

  it("substitutions and file redirections are never allowed by a prefix rule", () => {
    const rules = compile({ allow: ["Bash(git status:*)", "Bash(echo:*)"] })
    assert.strictEqual(verdict(bash("git status $(rm -rf /)"), rules), "ask")
    assert.strictEqual(verdict(bash("git status `rm -rf /`"), rules), "ask")
    assert.strictEqual(verdict(bash("echo \"$(curl evil)\""), rules), "ask")
    assert.strictEqual(verdict(bash("echo hi > ~/.bashrc"), rules), "ask")
    assert.strictEqual(verdict(bash("echo hi >/dev/null"), rules), "allow")
    assert.strictEqual(verdict(bash("echo 'a; rm -rf /'"), rules), "allow")
    assert.strictEqual(verdict(bash("echo 'unterminated"), rules), "ask")
  })

  it("deny catches a denied part anywhere, also behind env assignments", () => {
    const rules = compile({ allow: ["Bash"], deny: ["Bash(rm -rf:*)"] })
    assert.strictEqual(verdict(bash("cd /tmp && rm -rf x"), rules), "deny")
    assert.strictEqual(verdict(bash("FOO=1 rm -rf x"), rules), "deny")
    assert.strictEqual(verdict(bash("echo $(ls) ; rm -rf x"), rules), "deny")
    assert.strictEqual(verdict(bash("rm -r x"), rules), "allow")
  })

  it("path rules glob relative to the workspace", () => {
    const rules = compile({ allow: ["Edit(src/**)"], deny: ["Edit(/etc/**)"] })
    assert.strictEqual(verdict(edit("src/a/b.ts"), rules), "allow")
    assert.strictEqual(verdict(edit("/work/project/src/x.ts"), rules), "allow")
    assert.strictEqual(verdict(edit("./src/../src/x.ts"), rules), "allow")
    assert.strictEqual(verdict(edit("test/x.ts"), rules), "ask")
    assert.strictEqual(verdict(edit("src/../../other/src/x.ts"), rules), "ask")
    assert.strictEqual(verdict(edit("/etc/hosts"), rules), "deny")
    assert.strictEqual(verdict({ name: "Edit", arguments: "not json" }, rules), "ask")
  })

  it("a session grant allows the second identical call, outranks ask, never outranks deny", () => {
    const rules = compile({ ask: ["Bash(npm:*)"], deny: ["Bash(npm publish:*)"] })
    const grant = grantFor(bash("npm test"))
    assert.strictEqual(grant.text, "Bash(npm test:*)")
    assert.strictEqual(verdict(bash("npm test"), rules), "ask")
    assert.deepStrictEqual(classify(bash("npm test"), rules, [grant], ws), { verdict: "allow", source: "session", rule: "Bash(npm test:*)" })
    assert.strictEqual(verdict(bash("npm test -- --watch"), rules, [grant]), "allow")
    assert.strictEqual(verdict(bash("npm install"), rules, [grant]), "ask")
    assert.strictEqual(verdict(bash("npm publish"), rules, [grantFor(bash("npm publish"))]), "deny")
  })

  it("a compound command is granted verbatim only", () => {
    const grant = grantFor(bash("make && make test"))
    assert.strictEqual(grant.text, "Bash(make && make test)")
    assert.strictEqual(verdict(bash("make  &&  make test"), compile({}), [grant]), "allow")
    assert.strictEqual(verdict(bash("make && make test && rm -rf /"), compile({}), [grant]), "ask")
    assert.strictEqual(grantFor(edit("src/a.ts")).text, "Edit")
  })
})

describe("splitCommand", () => {
  it("splits on every operator outside quotes", () => {
    assert.deepStrictEqual(splitCommand("a; b && c || d | e & f\ng"), { parts: ["a", "b", "c", "d", "e", "f", "g"], opaque: false })
    assert.deepStrictEqual(splitCommand("echo \"a;b\" 'c|d' e\\;f"), { parts: ["echo \"a;b\" 'c|d' e\\;f"], opaque: false })
    assert.deepStrictEqual(splitCommand("cmd 2>&1 | tee"), { parts: ["cmd 2>&1", "tee"], opaque: false })
    assert.isTrue(splitCommand("diff <(a) <(b)").opaque)
    assert.isTrue(splitCommand("cat x >> y").opaque)
  })
})

describe("MCP tools in rules", () => {
  const mcp = (name: string, args: unknown = {}) => ({ name, arguments: JSON.stringify(args) })

  it("mcp__<server> covers every tool of that server, and only of that server", () => {
    const rules = compile({ allow: ["mcp__fixture"] })
    assert.deepStrictEqual(classify(mcp("mcp__fixture__echo"), rules, [], ws), { verdict: "allow", source: "rule", rule: "mcp__fixture" })
    assert.strictEqual(verdict(mcp("mcp__fixture__a__b"), rules), "allow", "a tool whose own name has __")
    assert.strictEqual(verdict(mcp("mcp__fixture2__echo"), rules), "ask", "a server whose name starts the same")
    assert.strictEqual(verdict(mcp("mcp__fix__echo"), compile({ allow: ["mcp__fixture"] })), "ask")
    assert.strictEqual(verdict(mcp("mcp__other__echo"), rules), "ask")
  })

  it("a tool rule names one tool; deny wins over a server-wide allow", () => {
    const rules = compile({ allow: ["mcp__fixture"], deny: ["mcp__fixture__crash"] })
    assert.deepStrictEqual(classify(mcp("mcp__fixture__crash"), rules, [], ws), { verdict: "deny", source: "rule", rule: "mcp__fixture__crash" })
    assert.strictEqual(verdict(mcp("mcp__fixture__echo"), rules), "allow")
    assert.strictEqual(verdict(mcp("mcp__fixture__echo"), compile({ deny: ["mcp__fixture"], allow: ["mcp__fixture__echo"] })), "deny")
    assert.strictEqual(verdict(mcp("mcp__fixture__echo"), compile({ ask: ["mcp__fixture"], allow: ["mcp__fixture__echo"] })), "ask")
  })

  it("a tool rule is not a server rule: mcp__a__b never covers mcp__a__b__c", () => {
    assert.strictEqual(verdict(mcp("mcp__a__b__c"), compile({ allow: ["mcp__a__b"] })), "ask")
    assert.strictEqual(verdict(mcp("mcp__a__b"), compile({ allow: ["mcp__a__b"] })), "allow")
  })

  it("allow always grants the one tool, by name", () => {
    const grant = grantFor(mcp("mcp__fixture__echo", { text: "hi" }))
    assert.deepStrictEqual(grant, { text: "mcp__fixture__echo", tool: "mcp__fixture__echo", specifier: undefined })
    assert.strictEqual(verdict(mcp("mcp__fixture__echo", { text: "other" }), compile({}), [grant]), "allow")
    assert.strictEqual(verdict(mcp("mcp__fixture__fail"), compile({}), [grant]), "ask")
  })
})
