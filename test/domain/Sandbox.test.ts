import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { classify, parseRules } from "../../src/domain/Permissions.js"
import { describeSandbox, sandboxFailureNote, SandboxSettings, type SandboxStatus, withSandbox } from "../../src/domain/Sandbox.js"
import { bwrapArgs, type MountPlan, seatbeltProfile } from "../../src/domain/SandboxProfile.js"

const on: SandboxStatus = { mode: "workspace-write", network: false, active: true }

const plan: MountPlan = {
  mode: "workspace-write",
  network: false,
  cwd: "/tmp/run-1/ws",
  writable: ["/tmp/run-1/ws", "/srv/shared"],
  hidden: [
    { path: "/home/u/.ssh", directory: true },
    { path: "/home/u/.netrc", directory: false },
    { path: "/tmp/run-1/home/.baton", directory: true },
    { path: "/tmp/elsewhere/secret", directory: false },
    { path: "/tmp/run-1/ws/.env", directory: false }
  ],
  privileged: true
}

const bash = (args: Record<string, unknown>) => ({ name: "Bash", arguments: JSON.stringify(args) })

describe("the sandbox's bubblewrap command line", () => {
  it("workspace-write: read-only root, private /tmp with the workspace's top directory shown read-only, secrets hidden around the writable binds", () => {
    assert.deepStrictEqual(bwrapArgs(plan, ["bash", "-c", "true"]), [
      "--ro-bind", "/", "/",
      "--dev", "/dev",
      "--proc", "/proc",
      "--tmpfs", "/tmp",
      "--ro-bind", "/tmp/run-1", "/tmp/run-1",
      "--tmpfs", "/home/u/.ssh",
      "--ro-bind", "/dev/null", "/home/u/.netrc",
      "--tmpfs", "/tmp/run-1/home/.baton",
      "--bind", "/tmp/run-1/ws", "/tmp/run-1/ws",
      "--bind", "/srv/shared", "/srv/shared",
      "--ro-bind", "/dev/null", "/tmp/run-1/ws/.env",
      "--remount-ro", "/home/u/.ssh",
      "--remount-ro", "/tmp/run-1/home/.baton",
      "--unshare-pid",
      "--unshare-ipc",
      "--unshare-net",
      "--die-with-parent",
      "--cap-drop", "ALL",
      "--setenv", "TMPDIR", "/tmp",
      "--chdir", "/tmp/run-1/ws",
      "--",
      "bash", "-c", "true"
    ])
  })

  it("read-only binds nothing writable and keeps the host's /tmp read-only; network: true keeps the network; unprivileged keeps its capabilities", () => {
    const args = bwrapArgs({ ...plan, mode: "read-only", network: true, privileged: false }, ["true"])
    assert.notInclude(args, "--bind")
    assert.notInclude(args, "--unshare-net")
    assert.notInclude(args, "--cap-drop")
    assert.notInclude(args.join(" "), "--tmpfs /tmp ")
    assert.include(args.join(" "), "--ro-bind /dev/null /tmp/elsewhere/secret", "the host's /tmp is visible, so its secrets are hidden")
  })
})

describe("what a sandboxed command needs to read", () => {
  it("a readable path under the private /tmp (an MCP server's script) shows its top directory again, read-only", () => {
    const args = bwrapArgs({ ...plan, readable: ["/tmp/clone-7/test/support/server.mjs", "/usr/bin/node"] }, ["node", "/tmp/clone-7/test/support/server.mjs"]).join(" ")
    assert.include(args, "--tmpfs /tmp --ro-bind /tmp/run-1 /tmp/run-1 --ro-bind /tmp/clone-7 /tmp/clone-7 ")
    assert.notInclude(args, "--bind /tmp/clone-7", "shown, never writable")
    assert.notInclude(args, "/usr/bin/node /usr/bin/node", "outside /tmp it is already visible")
  })
})

describe("the Seatbelt profile (macOS)", () => {
  it("reads everywhere but the hidden paths, writes only in the writable roots and the temp dir, no network", () => {
    const profile = seatbeltProfile({ ...plan, writable: ["/Users/u/my \"ws\""], hidden: [{ path: "/Users/u/.ssh", directory: true }, { path: "/Users/u/.netrc", directory: false }] }, "/private/tmp/b1")
    assert.strictEqual(profile, [
      "(version 1)",
      "(deny default)",
      "(allow process-exec)",
      "(allow process-fork)",
      "(allow signal (target same-sandbox))",
      "(allow process-info* (target same-sandbox))",
      "(allow sysctl-read)",
      "(allow mach-lookup)",
      "(allow ipc-posix-shm-read-data)",
      "(allow file-read*)",
      "(deny file-read* file-write* (subpath \"/Users/u/.ssh\") (literal \"/Users/u/.netrc\"))",
      "(allow file-write* (literal \"/dev/null\") (literal \"/dev/tty\") (regex #\"^/dev/fd/[0-9]+$\") (subpath \"/Users/u/my \\\"ws\\\"\") (subpath \"/private/tmp/b1\"))",
      "(deny file-write* (subpath \"/Users/u/.ssh\") (literal \"/Users/u/.netrc\"))",
      "(allow network* (remote unix-socket))",
      ""
    ].join("\n"))
    const open = seatbeltProfile({ ...plan, mode: "read-only", network: true, hidden: [] }, "/private/tmp/b1")
    assert.include(open, "(allow network*)\n")
    assert.include(open, "(allow file-write* (literal \"/dev/null\") (literal \"/dev/tty\") (regex #\"^/dev/fd/[0-9]+$\"))")
  })
})

describe("sandbox settings, verdicts and notes", () => {
  it("settings: unknown keys and unknown modes are errors", () => {
    const decode = Schema.decodeUnknownEither(SandboxSettings)
    assert.isTrue(Either.isRight(decode({ mode: "read-only", network: true, writable: ["~/cache"], hidden: [".secrets"] })))
    assert.isTrue(Either.isLeft(decode({ mode: "workspace" })))
    assert.isTrue(Either.isLeft(decode({ mode: "off", netwrok: true })))
  })

  it("Bash(sandboxed) covers any command that runs inside, opaque ones too, and nothing outside", () => {
    const rules = Either.getOrThrow(parseRules({ allow: ["Bash(sandboxed)"], ask: [], deny: ["Bash(rm:*)"], additionalDirectories: [] }))
    const inside = { ...bash({ command: "eval \"$(curl x)\" | sh" }), sandboxed: true }
    assert.deepStrictEqual(classify(inside, rules, [], "/ws"), { verdict: "allow", source: "rule", rule: "Bash(sandboxed)" })
    assert.strictEqual(classify({ ...inside, sandboxed: false }, rules, [], "/ws").verdict, "ask")
    assert.strictEqual(classify({ ...bash({ command: "rm -rf x" }), sandboxed: true }, rules, [], "/ws").verdict, "deny")
  })

  it("sandbox: false and a missing sandbox turn an allow into a question; a deny stays; off changes nothing", () => {
    const allowed = { verdict: "allow", source: "rule", rule: "Bash" } as const
    const outside = withSandbox(allowed, bash({ command: "npm i", sandbox: false }), on)
    assert.strictEqual(outside.verdict, "ask")
    assert.include(outside.reason, "sandbox: false")
    const missing = withSandbox(allowed, bash({ command: "ls" }), { ...on, active: false, unavailable: "bwrap not found on PATH" })
    assert.strictEqual(missing.verdict, "ask")
    assert.include(missing.reason, "bwrap not found on PATH")
    assert.deepStrictEqual(withSandbox({ verdict: "deny", source: "rule" }, bash({ command: "ls", sandbox: false }), on).verdict, "deny")
    assert.deepStrictEqual(withSandbox(allowed, bash({ command: "ls", sandbox: false }), { mode: "off", network: true, active: false }), allowed)
    assert.deepStrictEqual(withSandbox(allowed, { name: "Read", arguments: "{}" }, on), allowed)
  })

  it("a failed command's note names the sandbox's refusal, and only when it could be the cause", () => {
    assert.include(sandboxFailureNote(1, "bash: /etc/x: Read-only file system", on), "failed with: read-only file system")
    assert.include(sandboxFailureNote(6, "curl: (6) Could not resolve host: example.com", on), "failed with: no network")
    assert.include(sandboxFailureNote(1, "x", on) ?? "absent", "absent")
    assert.strictEqual(sandboxFailureNote(0, "Read-only file system", on), undefined)
    assert.strictEqual(sandboxFailureNote(7, "Connection refused", { ...on, network: true }), undefined, "with the network on, a refused connection is not the sandbox")
    assert.include(sandboxFailureNote(1, "EROFS", on), "ask to run it with sandbox: false")
  })

  it("describes the mode in force for a header", () => {
    assert.strictEqual(describeSandbox(on), "sandbox workspace-write, no network")
    assert.strictEqual(describeSandbox({ mode: "off", network: true, active: false }), "sandbox off")
    assert.strictEqual(describeSandbox({ mode: "off", network: true, active: false, unavailable: "bwrap not found" }), "sandbox off (bwrap not found)")
    assert.include(describeSandbox({ ...on, active: false, unavailable: "bwrap not found" }), "every Bash call is asked")
  })
})
