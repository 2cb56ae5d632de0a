import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { cliDirs, runCli, startServe } from "../support/cliProcess.js"
import { assertErrorJson } from "../support/httpErrors.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { haveBwrap } from "../support/sandbox.js"
import { startWeb } from "../support/webProcess.js"

interface Answer {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

/** A raw HTTP request: node's fetch will not send a Host of our choosing, and a rebinding page does. */
const request = (url: string, options: { readonly method?: string; readonly headers?: Record<string, string>; readonly body?: string } = {}) =>
  Effect.async<Answer>((resume) => {
    const req = Http.request(url, { method: options.method ?? "GET", headers: options.headers ?? {} }, (res) => {
      let body = ""
      res.setEncoding("utf8").on("data", (c: string) => (body += c))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body })))
    })
    req.on("error", (e) => resume(Effect.die(e)))
    req.end(options.body)
  })

const json = { "content-type": "application/json" }

/** Reads a conversation's event stream from `after` until its text contains `until`. */
const readEvents = (url: string, until: string) =>
  Effect.async<string>((resume) => {
    let text = ""
    const req = Http.get(url, (res) => {
      res.setEncoding("utf8").on("data", (c: string) => {
        text += c
        if (text.includes(until)) {
          req.destroy()
          resume(Effect.succeed(text))
        }
      })
    })
    return Effect.sync(() => req.destroy())
  })

describe("baton web over plain HTTP (built CLI): who may use it, approvals with no page, --server", () => {
  it.scopedLive("loopback: a foreign Host (DNS rebinding) and a state-changing request from another origin, or none, are refused with 403", () =>
    Effect.gen(function*() {
      const model = yield* MockModelServer.make()
      const dirs = yield* cliDirs
      const web = yield* startWeb(["--port", "0", "-w", dirs.workspace, "--home", dirs.home, "--sandbox", "read-only"], model.childEnv("anthropic"))
      const api = `${web.origin}/api/conversations`
      const port = new URL(web.origin).port
      const { sandbox } = JSON.parse((yield* request(`${web.origin}/api/info`)).body)
      assert.deepStrictEqual([sandbox.mode, sandbox.network, sandbox.active], ["read-only", false, haveBwrap], "the page can show how Bash runs")
      const rebound = yield* request(api, { headers: { host: `attacker.example:${port}` } })
      assertErrorJson(rebound, { status: 403, code: "forbidden", mentions: "attacker.example" })
      const crossSite = yield* request(api, { method: "POST", headers: { ...json, origin: "http://attacker.example" }, body: "{}" })
      assertErrorJson(crossSite, { status: 403, code: "forbidden", mentions: "attacker.example" })
      const noOrigin = yield* request(api, { method: "POST", headers: json, body: "{}" })
      assert.strictEqual(noOrigin.status, 403)
      // Nothing was created by the refused requests.
      assert.deepStrictEqual(JSON.parse((yield* request(api)).body).conversations, [])
      const own = yield* request(api, { method: "POST", headers: { ...json, origin: web.origin } })
      assert.strictEqual(own.status, 200)
      const localhost = yield* request(api, { headers: { host: `localhost:${port}` } })
      assert.strictEqual(localhost.status, 200, "localhost names the same server")
    }))

  it.scopedLive("a non-loopback --host without a token refuses to start (exit 2); with a token, the one-time URL sets an HttpOnly cookie and nothing secret reaches the page", () =>
    Effect.gen(function*() {
      const model = yield* MockModelServer.make()
      const dirs = yield* cliDirs
      const open = yield* runCli(["web", "--host", "0.0.0.0", "--port", "0", "-w", dirs.workspace, "--home", dirs.home], { env: model.childEnv("anthropic") })
      assert.strictEqual(open.code, 2)
      assert.include(open.stderr, "refusing to listen on 0.0.0.0 without a token")
      const token = "s3cret-web-token"
      const web = yield* startWeb(["--port", "0", "--token", token, "-w", dirs.workspace, "--home", dirs.home], model.childEnv("anthropic"))
      assert.strictEqual(web.url, `${web.origin}/?token=${token}`)
      const api = `${web.origin}/api/conversations`
      assertErrorJson(yield* request(api), { status: 401, code: "unauthorized", mentions: "token" })
      assert.strictEqual((yield* request(`${web.origin}/`)).status, 401)
      assert.strictEqual((yield* request(`${web.origin}/?token=wrong`)).status, 401)
      const entry = yield* request(web.url)
      assert.strictEqual(entry.status, 303)
      assert.strictEqual(entry.headers.location, "/", "the token leaves the address bar")
      const cookie = entry.headers["set-cookie"]?.[0] ?? ""
      assert.match(cookie, /^baton_web=[0-9a-f]{64}; /)
      assert.match(cookie, /HttpOnly/)
      assert.match(cookie, /SameSite=Strict/)
      assert.notInclude(cookie, token)
      const session = cookie.split(";")[0]!
      const page = yield* request(`${web.origin}/`, { headers: { cookie: session } })
      assert.strictEqual(page.status, 200)
      // Never inside another site's frame (clickjacking the Allow button).
      assert.strictEqual(page.headers["x-frame-options"], "DENY")
      assert.include(page.headers["content-security-policy"], "frame-ancestors 'none'")
      const script = yield* request(`${web.origin}/app.js`, { headers: { cookie: session } })
      assert.notInclude(page.body + script.body, token)
      assert.strictEqual((yield* request(api, { headers: { cookie: session } })).status, 200)
      // The cookie does not replace the Origin check.
      assert.strictEqual((yield* request(api, { method: "POST", headers: { ...json, cookie: session } })).status, 403)
      assert.strictEqual((yield* request(api, { method: "POST", headers: { ...json, cookie: session, origin: web.origin } })).status, 200)
      // A program with the bearer token needs neither.
      assert.strictEqual((yield* request(api, { method: "POST", headers: { ...json, authorization: `Bearer ${token}` } })).status, 200)
      assert.strictEqual((yield* web.stderr).split(token).length, 2, "printed once, inside the URL to open")
    }))

  it.scopedLive("with no page connected, a call that needs approval waits for an answer; the answer decides it (never a default)", () =>
    Effect.gen(function*() {
      const model = yield* MockModelServer.make({
        replies: [Reply.toolCalls([{ id: "call_w", name: "Write", args: { file_path: "new.txt", content: "x" } }]), Reply.text("Not written.")]
      })
      const dirs = yield* cliDirs
      const web = yield* startWeb(["--port", "0", "-w", dirs.workspace, "--home", dirs.home], model.childEnv("anthropic"))
      const headers = { ...json, origin: web.origin }
      const { conversation } = JSON.parse((yield* request(`${web.origin}/api/conversations`, { method: "POST", headers })).body)
      const base = `${web.origin}/api/conversations/${conversation.id}`
      assert.strictEqual((yield* request(`${base}/tasks`, { method: "POST", headers, body: JSON.stringify({ prompt: "write new.txt" }) })).status, 202)
      const busy = yield* request(`${base}/tasks`, { method: "POST", headers, body: JSON.stringify({ prompt: "again" }) })
      assert.strictEqual(busy.status, 400)
      assert.include(busy.body, "already running")
      // Follow the log (no page): the question arrives and stays open.
      const events = yield* readEvents(`${base}/events?after=0`, '"approval_request"')
      assert.include(events, '"tool_call_id":"call_w"')
      assert.notInclude(events, "approval_decision")
      assert.isFalse(Fs.existsSync(Path.join(dirs.workspace, "new.txt")))
      assert.strictEqual((yield* request(`${base}/approvals/call_w`, { method: "POST", headers, body: JSON.stringify({ decision: "deny" }) })).status, 200)
      const done = yield* readEvents(`${base}/events?after=0`, '"running":false')
      assert.include(done, '"decision":"deny","source":"user"')
      assert.include(done, "Not written.")
      assert.isFalse(Fs.existsSync(Path.join(dirs.workspace, "new.txt")))
    }))

  it.scopedLive("a subagent's call asks the page too: its approval_request carries the origin and is answered by the child's conversation and call id", () =>
    Effect.gen(function*() {
      const model = yield* MockModelServer.make({
        replies: [
          Reply.toolCalls([{ id: "t1", name: "Task", args: { description: "write it", prompt: "write new.txt" } }]),
          // The child's call reuses an id the parent could have: the page answers it by the child's conversation.
          Reply.toolCalls([{ id: "t1", name: "Write", args: { file_path: "new.txt", content: "x" } }]),
          Reply.text("Written."),
          Reply.text("The subagent wrote it.")
        ]
      })
      const dirs = yield* cliDirs
      const web = yield* startWeb(["--port", "0", "-w", dirs.workspace, "--home", dirs.home], model.childEnv("anthropic"))
      const headers = { ...json, origin: web.origin }
      const { conversation } = JSON.parse((yield* request(`${web.origin}/api/conversations`, { method: "POST", headers })).body)
      const base = `${web.origin}/api/conversations/${conversation.id}`
      assert.strictEqual((yield* request(`${base}/tasks`, { method: "POST", headers, body: JSON.stringify({ prompt: "delegate" }) })).status, 202)
      yield* readEvents(`${base}/events?after=0`, '"approval_request"')
      assert.strictEqual((yield* request(`${base}/approvals/t1`, { method: "POST", headers, body: JSON.stringify({ decision: "allow" }) })).status, 200)
      const asked = yield* readEvents(`${base}/events?after=0`, '"type":"approval_request","tool_call_id":"t1","name":"Write"')
      const line = asked.split("\n").find((l) => l.includes('"approval_request"') && l.includes('"origin"'))!
      const event = JSON.parse(line.slice(line.indexOf("{")))
      assert.strictEqual(event.name, "Write")
      assert.strictEqual(event.origin.tool_call_id, "t1")
      assert.strictEqual(event.origin.description, "write it")
      assert.notStrictEqual(event.origin.conversation_id, conversation.id)
      assert.isFalse(Fs.existsSync(Path.join(dirs.workspace, "new.txt")))
      // The parent's own id is answered already: the child's question is keyed by its conversation.
      const key = encodeURIComponent(`${event.origin.conversation_id}/t1`)
      assert.strictEqual((yield* request(`${base}/approvals/${key}`, { method: "POST", headers, body: JSON.stringify({ decision: "allow" }) })).status, 200)
      const done = yield* readEvents(`${base}/events?after=0`, '"running":false')
      assert.include(done, "The subagent wrote it.")
      assert.strictEqual(Fs.readFileSync(Path.join(dirs.workspace, "new.txt"), "utf8"), "x")
    }))

  it.scopedLive("over --server: the conversation lives in the server's home, the tools run in the web host's workspace", () =>
    Effect.gen(function*() {
      const model = yield* MockModelServer.make({
        replies: [Reply.toolCalls([{ id: "call_r", name: "Read", args: { file_path: "a.txt" } }]), Reply.text("It says alpha.")]
      })
      const dirs = yield* cliDirs
      Fs.writeFileSync(Path.join(dirs.workspace, "a.txt"), "alpha\n")
      const serverHome = Path.join(dirs.root, "server-home")
      const server = yield* startServe(["--home", serverHome], model.childEnv("anthropic"))
      const web = yield* startWeb(["--port", "0", "--server", server.url, "-w", dirs.workspace, "--home", dirs.home], {})
      const headers = { ...json, origin: web.origin }
      const { conversation } = JSON.parse((yield* request(`${web.origin}/api/conversations`, { method: "POST", headers })).body)
      const base = `${web.origin}/api/conversations/${conversation.id}`
      yield* request(`${base}/tasks`, { method: "POST", headers, body: JSON.stringify({ prompt: "what is in a.txt?" }) })
      yield* readEvents(`${base}/events?after=0`, '"approval_request"')
      yield* request(`${base}/approvals/call_r`, { method: "POST", headers, body: JSON.stringify({ decision: "allow" }) })
      const done = yield* readEvents(`${base}/events?after=0`, '"running":false')
      assert.include(done, "It says alpha.")
      assert.include(done, '"status":"success","content":"     1\\talpha"')
      assert.isTrue(Fs.existsSync(Path.join(serverHome, "baton.db")))
      assert.isFalse(Fs.existsSync(Path.join(dirs.home, "baton.db")), "the web host keeps no conversations of its own")
    }))

  it.scopedLive("SIGTERM stops the host: a task waiting for its answer is interrupted and its carry-over recorded for the next task", () =>
    Effect.gen(function*() {
      const model = yield* MockModelServer.make({
        replies: [Reply.toolCalls([{ id: "call_x", name: "Bash", args: { command: "touch ran.txt" } }]), Reply.text("Understood.")]
      })
      const dirs = yield* cliDirs
      const web = yield* startWeb(["--port", "0", "-w", dirs.workspace, "--home", dirs.home], model.childEnv("anthropic"))
      const headers = { ...json, origin: web.origin }
      const { conversation } = JSON.parse((yield* request(`${web.origin}/api/conversations`, { method: "POST", headers })).body)
      const base = `${web.origin}/api/conversations/${conversation.id}`
      yield* request(`${base}/tasks`, { method: "POST", headers, body: JSON.stringify({ prompt: "touch ran.txt" }) })
      yield* readEvents(`${base}/events?after=0`, '"approval_request"')
      assert.strictEqual(yield* web.stop, 130)
      assert.isFalse(Fs.existsSync(Path.join(dirs.workspace, "ran.txt")))
      const next = yield* runCli(["run", "--json", "--conversation", conversation.id, "-w", dirs.workspace, "--home", dirs.home, "go on"], {
        env: model.childEnv("anthropic")
      })
      assert.strictEqual(next.code, 0, next.stderr)
      const sent = (yield* model.requests).at(-1)!.body
      assert.include(sent, "[interrupted: tool aborted by user]")
      assert.isFalse(Fs.existsSync(Path.join(dirs.workspace, "ran.txt")), "never run")
    }))

  it.scopedLive("GET /api/openapi.json documents the page's API (behind the same token): its endpoints, the event stream, serve's error schemas", () =>
    Effect.gen(function*() {
      const model = yield* MockModelServer.make()
      const dirs = yield* cliDirs
      const token = "tok-openapi-0123456789"
      const web = yield* startWeb(["--port", "0", "-w", dirs.workspace, "--home", dirs.home, "--token", token], model.childEnv("anthropic"))
      const url = `${web.origin}/api/openapi.json`
      assertErrorJson(yield* request(url), { status: 401, code: "unauthorized", mentions: "token" })
      const answer = yield* request(url, { headers: { authorization: `Bearer ${token}` } })
      assert.strictEqual(answer.status, 200)
      const spec = JSON.parse(answer.body) as {
        readonly paths: Record<string, Record<string, { readonly responses: Record<string, { readonly content?: Record<string, unknown> }> }>>
      }
      const operations = Object.entries(spec.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
      for (
        const operation of [
          "GET /api/info",
          "GET /v1/usage",
          "GET /api/conversations",
          "POST /api/conversations",
          "GET /api/conversations/{id}",
          "GET /api/conversations/{id}/subagents",
          "GET /api/conversations/{id}/usage",
          "GET /api/conversations/{id}/backfill",
          "GET /api/conversations/{id}/events",
          "POST /api/conversations/{id}/tasks",
          "POST /api/conversations/{id}/approvals/{call}",
          "POST /api/conversations/{id}/steer",
          "POST /api/conversations/{id}/title",
          "POST /api/conversations/{id}/interrupt",
          "POST /api/conversations/{id}/skip-wait",
          "POST /api/conversations/{id}/retry"
        ]
      ) assert.include(operations, operation)
      const answerCall = spec.paths["/api/conversations/{id}/approvals/{call}"]?.post
      assert.containsAllKeys(answerCall?.responses ?? {}, ["200", "400", "404", "409", "413"], "the errors `baton serve` answers with")
      assert.containsAllKeys(spec.paths["/api/conversations/{id}/tasks"]?.post?.responses ?? {}, ["202"])
      assert.containsAllKeys(spec.paths["/api/conversations/{id}/events"]?.get?.responses["200"]?.content ?? {}, ["text/event-stream"])
    }))

  it.scopedLive("bad input is a clear 4xx and starts nothing: an empty prompt, a bad decision, an unknown conversation, a body over the limit", () =>
    Effect.gen(function*() {
      const model = yield* MockModelServer.make()
      const dirs = yield* cliDirs
      const web = yield* startWeb(["--port", "0", "-w", dirs.workspace, "--home", dirs.home], model.childEnv("anthropic"))
      const headers = { ...json, origin: web.origin }
      const { conversation } = JSON.parse((yield* request(`${web.origin}/api/conversations`, { method: "POST", headers })).body)
      const base = `${web.origin}/api/conversations/${conversation.id}`
      // The same error form as `baton serve`'s API (status, `code`, `message`).
      const empty = yield* request(`${base}/tasks`, { method: "POST", headers, body: JSON.stringify({ prompt: "   " }) })
      assertErrorJson(empty, { status: 400, code: "invalid_input", mentions: "prompt: the message is empty" })
      const notJson = yield* request(`${base}/tasks`, { method: "POST", headers, body: "{\"prompt\":" })
      assertErrorJson(notJson, { status: 400, code: "invalid_input", mentions: "JSON" })
      const decision = yield* request(`${base}/approvals/call_1`, { method: "POST", headers, body: JSON.stringify({ decision: "yes" }) })
      assertErrorJson(decision, { status: 400, code: "invalid_input", mentions: "allow_always" })
      const unanswerable = yield* request(`${base}/approvals/call_1`, { method: "POST", headers, body: JSON.stringify({ decision: "allow" }) })
      assertErrorJson(unanswerable, { status: 409, code: "tool_call_answered", mentions: "call_1" })
      const unknown = yield* request(`${web.origin}/api/conversations/conv-nope/tasks`, { method: "POST", headers, body: JSON.stringify({ prompt: "hi" }) })
      assertErrorJson(unknown, { status: 404, code: "not_found", mentions: "conv-nope" })
      const huge = yield* request(`${base}/tasks`, { method: "POST", headers, body: JSON.stringify({ prompt: "x".repeat(2 * 1024 * 1024) }) })
      assertErrorJson(huge, { status: 413, code: "payload_too_large", mentions: "limit" })
      assertErrorJson(yield* request(`${web.origin}/api/nothing-here`), { status: 404, code: "not_found" })
      // Steering with no task running is not kept: the page sends the line as a prompt instead.
      const idle = yield* request(`${base}/steer`, { method: "POST", headers, body: JSON.stringify({ text: "and the tests" }) })
      assert.deepStrictEqual([idle.status, JSON.parse(idle.body)], [200, { queued: false }])
      assert.strictEqual((yield* model.requests).length, 0, "no model request was made")
      assert.deepStrictEqual(JSON.parse((yield* request(base)).body).state, { running: false, lock: null })
    }))
})
