import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import type { Page } from "playwright-core"
import { assert, describe, it } from "vitest"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply, userTexts } from "../support/MockModelServer.js"
import { button, message, newConversation as newPage, send, useWebWorld } from "../support/webBrowser.js"
import { haveChromium, startWeb } from "../support/webProcess.js"

/**
 * `baton web` in a real Chromium (Debian's /usr/bin/chromium driven by playwright-core) against a
 * real `baton web` child process and the loopback mock model. One browser for the file, pages
 * reused where they can be: these are the slowest tests of the suite, kept few.
 */

const world = useWebWorld("test/web/WebPage.test.ts")
const { inScope } = world
const newConversation = (page: Page) => newPage(page, world.web.url)

/** A 503 as Anthropic sends it when overloaded, with the wait it asks for. */
const overloaded = () =>
  Reply.status(503, {
    headers: { "retry-after": "20" },
    body: JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })
  })

describe.skipIf(!haveChromium)("baton web in Chromium", () => {
  it("a tool task approved by clicking Allow: arguments, results, the edit's diff, reasoning collapsed, usage, a title", async () => {
    Fs.writeFileSync(Path.join(world.workspace, "a.txt"), "alpha\n")
    await inScope(world.model.enqueue(
      Reply.toolCalls([{ id: "call_read", name: "Read", args: { file_path: "a.txt" } }]),
      Reply.toolCalls([{ id: "call_edit", name: "Edit", args: { file_path: "a.txt", old_string: "alpha", new_string: "beta" } }]),
      Reply.text("I changed alpha to beta in a.txt.", { reasoning: { text: "The file says alpha; the user wants beta." } })
    ))
    const page = await world.browser.newPage()
    await newConversation(page)
    await send(page, "change alpha to beta in a.txt")
    await button(page, "Allow").click()
    // The second call is asked in its turn; "Allow always" grants Edit for the session.
    await page.locator("[data-call=call_edit]").getByRole("button", { name: "Allow always" }).click()
    await page.getByText("I changed alpha to beta in a.txt.").waitFor()
    assert.strictEqual(Fs.readFileSync(Path.join(world.workspace, "a.txt"), "utf8"), "beta\n")
    const read = page.locator("[data-call=call_read]")
    assert.include(await read.textContent(), "allowed by you")
    assert.include(await read.locator(".result").textContent(), "alpha")
    const edit = page.locator("[data-call=call_edit]")
    // The terminal's diff: line number, mark, text.
    assert.strictEqual(await edit.locator(".diff .del").first().textContent(), "1-alpha\n")
    assert.strictEqual(await edit.locator(".diff .del .ln").first().textContent(), "1")
    assert.strictEqual(await edit.locator(".diff .add").first().textContent(), "1+beta\n")
    assert.strictEqual(await edit.locator("summary").textContent(), "Edit a.txt · +1 −1")
    assert.include(await edit.textContent(), "allowed always by you")
    const reasoning = page.locator("details.reasoning")
    assert.isFalse(await reasoning.evaluate((d) => d.hasAttribute("open")), "reasoning is collapsed")
    assert.include(await reasoning.textContent(), "The file says alpha")
    assert.match(await page.getByLabel("Token usage").textContent() ?? "", /this task: 45 tokens · conversation: 45 tokens in 3 requests/)
    await button(page, "Send").waitFor()
    await inScope(world.model.enqueue(Reply.text("Alpha to beta in a.txt")))
    await button(page, "Name it").click()
    await page.getByRole("heading", { name: "Alpha to beta in a.txt" }).waitFor()
    await page.getByRole("navigation", { name: "Conversations" }).getByRole("button", { name: "Alpha to beta in a.txt" }).waitFor()
    await page.close()
  })

  it("streams as it arrives; a reload restores the transcript and re-joins the running task with its pending question; two tabs, the first answer wins", async () => {
    await inScope(world.model.enqueue(Reply.text("First answer.")))
    const tabA = await world.browser.newPage()
    const id = await newConversation(tabA)
    await send(tabA, "first")
    await tabA.getByText("First answer.").waitFor()
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    // message_start, content_block_start, the first text delta; the rest waits for `held`.
    await inScope(world.model.enqueue(
      Reply.scenario({ text: ["Let me ", "list it."], toolCalls: [{ id: "call_ls", name: "LS", args: {} }] }, { writes: [{ events: 3 }, { events: 100, after: held }] }),
      Reply.text("Listed.")
    ))
    await send(tabA, "second")
    await tabA.getByText("Let me", { exact: true }).waitFor()
    await button(tabA, "Stop").waitFor()
    // While the task runs the same box steers it.
    await message(tabA).fill("and count them")
    await button(tabA, "Steer").click()
    // A function, not a string: the page's CSP forbids eval, which a string predicate needs once it polls.
    await tabA.waitForFunction(() =>
      (globalThis as unknown as { document: { getElementById: (id: string) => { value: string } | null } }).document.getElementById("message")?.value === ""
    )
    await tabA.reload()
    // The history up to the task, then the task from its start, mid-stream.
    await tabA.getByText("First answer.").waitFor()
    await tabA.getByText("Let me", { exact: true }).waitFor()
    await button(tabA, "Steer").waitFor()
    release()
    await button(tabA, "Allow").waitFor()
    await tabA.reload()
    await button(tabA, "Allow").waitFor()
    assert.include(await tabA.locator("#transcript").textContent(), "Let me list it.")
    const tabB = await world.browser.newPage()
    await tabB.goto(`${world.web.url}#${id}`)
    await button(tabB, "Allow").click()
    await tabA.locator("[data-call=call_ls]").getByText("allowed by you").waitFor()
    assert.strictEqual(await button(tabA, "Allow").count(), 0, "the other tab shows the question answered")
    const late = await fetch(`${world.web.origin}/api/conversations/${id}/approvals/call_ls`, {
      method: "POST",
      headers: { origin: world.web.origin, "content-type": "application/json" },
      body: JSON.stringify({ decision: "deny" })
    })
    assert.strictEqual(late.status, 409, "a second answer is refused")
    await tabA.getByText("Listed.").waitFor()
    await tabB.getByText("Listed.").waitFor()
    assert.strictEqual(await tabB.locator(".user.steering").textContent(), "and count them")
    assert.include((await inScope(world.model.requests)).at(-1)!.body, "and count them", "the steering went with the next model request")
    await button(tabB, "Send").waitFor()
    assert.strictEqual(await tabB.locator("[data-call=call_ls] .result .status-success").count(), 1)
    await tabA.close()
    await tabB.close()
  })

  it("a line that loses the race with the task's end becomes the next prompt, shown as such", async () => {
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    await inScope(world.model.enqueue(
      Reply.text(["Almost ", "done."], {}, { writes: [{ events: 3 }, { events: 100, after: held }] }),
      Reply.text("Taken as a prompt.")
    ))
    const page = await world.browser.newPage()
    await newConversation(page)
    await send(page, "start")
    await page.getByText("Almost", { exact: true }).waitFor()
    await button(page, "Steer").waitFor()
    // The page still shows the task running when the line is sent; the Steer request is held in the
    // browser until the host's task has ended (the page shows Send again), so the host answers
    // `queued: false`: the race, every time.
    let steered = () => {}
    const steerSent = new Promise<void>((resolve) => (steered = resolve))
    let proceed = () => {}
    const ended = new Promise<void>((resolve) => (proceed = resolve))
    await page.route("**/steer", async (route) => {
      steered()
      await ended
      await route.continue()
    })
    await message(page).fill("one more thing")
    await button(page, "Steer").click()
    await steerSent
    release()
    await page.getByText("Almost done.").waitFor()
    await button(page, "Send").waitFor()
    proceed()
    await page.getByText("sent as the next prompt").waitFor()
    await page.getByText("Taken as a prompt.").waitFor()
    const last = (await inScope(world.model.requests)).at(-1)!
    assert.strictEqual(userTexts(last).at(-1), "one more thing", "the line went to the model as the next prompt")
    assert.notInclude(last.body, "[user_steering]", "not as steering")
    const users = page.locator("#transcript .msg.user")
    assert.strictEqual(await users.last().textContent(), "one more thing")
    assert.strictEqual(await page.locator("#transcript .msg.user.steering").count(), 0)
    await page.close()
  })

  it("a 503's countdown cut short by Retry now (before the announced delay, same attempt count); another abandoned with Abandon; Stop", async () => {
    await inScope(world.model.enqueue(overloaded(), Reply.text("Recovered.")))
    const page = await world.browser.newPage()
    const id = await newConversation(page)
    const before = (await inScope(world.model.requests)).length
    await send(page, "try")
    const timer = page.getByRole("timer")
    await timer.getByText(/retrying in 20 s/).waitFor()
    // It counts down live; a page loaded mid-wait counts down what is left, not the whole delay.
    await timer.getByText(/retrying in 1[0-9] s/).waitFor({ timeout: 5_000 })
    await page.reload()
    await timer.waitFor()
    assert.match(await timer.textContent() ?? "", /retrying in 1[0-9] s/)
    await button(page, "Retry now").click()
    await page.getByText("Recovered.").waitFor()
    assert.strictEqual(await timer.count(), 0)
    const requests = (await inScope(world.model.requests)).slice(before)
    assert.strictEqual(requests.length, 2)
    const waited = requests[1]!.receivedAt - requests[0]!.receivedAt
    const snapshot = (await (await fetch(`${world.web.origin}/api/conversations/${id}`)).json()) as {
      readonly items: ReadonlyArray<{ readonly type: string; readonly status?: string; readonly retry_in_ms?: number; readonly attempt?: number }>
    }
    const announced = snapshot.items.find((i) => i.type === "request_end" && i.status === "retrying")?.retry_in_ms
    assert.strictEqual(announced, 20_000)
    assert.isBelow(waited, 15_000, "the retry came before the announced delay")
    assert.deepStrictEqual(snapshot.items.filter((i) => i.type === "request_begin").map((i) => i.attempt), [0, 1], "the count is unchanged")

    await inScope(world.model.enqueue(overloaded()))
    await send(page, "again")
    await timer.getByText(/retrying in/).waitFor()
    await button(page, "Abandon").click()
    await page.getByText("stopped", { exact: true }).waitFor()
    await button(page, "Send").waitFor()
    assert.strictEqual(await button(page, "Stop").isHidden(), true)
    assert.strictEqual(await timer.count(), 0)
    assert.strictEqual((await inScope(world.model.requests)).length, before + 3, "abandoned: no retry was sent")

    // Stop ends a task that waits for an answer; its question is closed, not left to click.
    await inScope(world.model.enqueue(Reply.toolCalls([{ id: "call_stop", name: "Bash", args: { command: "echo never" } }])))
    await send(page, "run it")
    await button(page, "Allow").waitFor()
    await button(page, "Stop").click()
    await page.locator("[data-call=call_stop]").getByText("not answered: the task stopped").waitFor()
    await button(page, "Send").waitFor()
    assert.strictEqual(await button(page, "Allow").count(), 0)
    await page.close()
  })

  /** A new page's first prompt, refused by the model: the Message box locks and Retry is offered. */
  const lockedByRefusal = async (url: string) => {
    const page = await world.browser.newPage()
    await page.goto(url)
    await button(page, "New conversation").click()
    await send(page, "hello")
    await button(page, "Retry").waitFor()
    assert.isTrue(await message(page).isDisabled(), "the Message box is locked")
    return page
  }

  it("a 401 locks the Message box, names the credentials and offers Retry; it unlocks by itself once the host has new credentials", async () => {
    const port = 0
    const env = (key: string) => ({ ...world.model.childEnv("anthropic"), BATON_API_KEY: key })
    const authHome = Path.join(world.tmp, "auth-home")
    const rejected = () =>
      Reply.status(401, { body: JSON.stringify({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } }) })
    await inScope(world.model.enqueue(rejected(), rejected()))
    const first = await inScope(startWeb(["--port", String(port), "-w", world.workspace, "--home", authHome], env("sk-rejected")))
    const page = await lockedByRefusal(first.url)
    assert.isTrue(await button(page, "Send").isDisabled())
    const banner = await page.locator("#banner").textContent()
    assert.include(banner, `the API key for anthropic at ${world.model.url} (BATON_API_KEY)`)
    assert.include(banner, "invalid x-api-key")
    const before = (await inScope(world.model.requests)).length
    await button(page, "Retry").click()
    const retried = (await inScope(world.model.awaitRequests(before + 1)))[before]!
    // Retry re-runs the conversation: the prompt is in the request once, not sent again.
    assert.deepStrictEqual(MockModelServer.userTexts(retried), ["hello"])
    await page.getByText("stopped: auth", { exact: false }).nth(1).waitFor()
    await button(page, "Retry").waitFor()
    assert.isTrue(await message(page).isDisabled(), "refused again: still locked")
    // New credentials: the host restarts with them on the same address; the page reconnects by itself.
    await Effect.runPromise(first.stop)
    await inScope(startWeb(["--port", new URL(first.origin).port, "-w", world.workspace, "--home", authHome], env("sk-accepted")))
    await page.locator("#message:enabled").waitFor({ timeout: 15_000 })
    assert.strictEqual(await button(page, "Retry").count(), 0)
    await inScope(world.model.enqueue(Reply.text("Authorized now.")))
    await send(page, "hello again")
    await page.getByText("Authorized now.").waitFor()
    const last = (await inScope(world.model.requests)).at(-1)!
    assert.strictEqual(last.headers["x-api-key"], "sk-accepted")
    assert.deepStrictEqual(MockModelServer.userTexts(last), ["hello", "hello again"])
    await page.close()
  })

  it("with an apiKeyHelper the lock opens by itself once the helper prints another key, without a restart", async () => {
    const helperHome = Path.join(world.tmp, "helper-home")
    const keyFile = Path.join(world.tmp, "rotating-key")
    Fs.mkdirSync(helperHome, { recursive: true })
    Fs.writeFileSync(keyFile, "sk-refused\n")
    Fs.writeFileSync(Path.join(helperHome, "settings.json"), JSON.stringify({ apiKeyHelper: `cat '${keyFile}'` }))
    await inScope(world.model.enqueue(
      Reply.status(401, { body: JSON.stringify({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } }) })
    ))
    const host = await inScope(startWeb(["--port", "0", "-w", world.workspace, "--home", helperHome], world.model.childEnv("anthropic")))
    const page = await lockedByRefusal(host.url)
    Fs.writeFileSync(keyFile, "sk-rotated\n")
    await page.locator("#message:enabled").waitFor({ timeout: 15_000 })
    await inScope(world.model.enqueue(Reply.text("Rotated in.")))
    await send(page, "hello again")
    await page.getByText("Rotated in.").waitFor()
    assert.strictEqual((await inScope(world.model.requests)).at(-1)!.headers["x-api-key"], "sk-rotated")
    await page.close()
  })

  it("a cross-origin POST from another page is refused (403) and changes nothing", async () => {
    const other = Http.createServer((_req, res) => res.end("<!doctype html><title>another site</title>"))
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve))
    try {
      const list = async () => ((await (await fetch(`${world.web.origin}/api/conversations`)).json()) as { conversations: ReadonlyArray<unknown> }).conversations.length
      const count = await list()
      const page = await world.browser.newPage()
      await page.goto(`http://127.0.0.1:${(other.address() as { port: number }).port}/`)
      const [refused] = await Promise.all([
        page.waitForResponse((r) => r.url() === `${world.web.origin}/api/conversations`),
        page.evaluate((url) => fetch(url, { method: "POST", mode: "no-cors", body: "{}" }).catch(() => undefined), `${world.web.origin}/api/conversations`)
      ])
      assert.strictEqual(refused.status(), 403)
      assert.strictEqual(await list(), count, "nothing was created")
      await page.close()
    } finally {
      other.close()
    }
  })
})
