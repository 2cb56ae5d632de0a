import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Page } from "playwright-core"
import { assert, describe, it } from "vitest"
import { runCli } from "../support/cliProcess.js"
import { Reply } from "../support/MockModelServer.js"
import { button, newConversation, send, useWebWorld } from "../support/webBrowser.js"
import { haveChromium } from "../support/webProcess.js"

/**
 * What the transcript of `baton web` shows, in Chromium: the model's Markdown rendered and
 * sanitized, code highlighted, tool cards one line each, questions answered from the keyboard, the
 * token count right across reloads, a burst turn in order, a subagent nested under its Task call.
 */

const world = useWebWorld("test/web/WebTranscript.test.ts")
const { inScope } = world

/** The number the page shows as the conversation's tokens. */
const shownTokens = async (page: Page) => Number(await page.getByLabel("Token usage").getAttribute("data-tokens"))

const waitIdle = (page: Page) => button(page, "Send").waitFor()

describe.skipIf(!haveChromium)("the transcript of baton web", () => {
  it("Markdown renders a list, inline code and a highlighted fenced block with a Copy button; HTML from the model or a tool stays inert", async () => {
    const payload = `<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2"><a href="javascript:window.__pwned = 3">link</a>`
    await inScope(world.model.enqueue(
      Reply.toolCalls([{ id: "call_echo", name: "Bash", args: { command: `printf '%s' '${payload}'` } }]),
      Reply.text(
        ["Here is the plan:", "", "- run `npm test`", "- read the **output**", "", "```js", "const answer = 42", "```", "", payload].join("\n")
      )
    ))
    const page = await world.browser.newPage()
    await newConversation(page, world.web.url)
    await send(page, "show me")
    await button(page, "Allow").click()
    const answer = page.locator(".msg.assistant").last()
    await answer.locator("li").nth(1).waitFor()
    assert.deepStrictEqual(await answer.locator("li").allTextContents(), ["run npm test", "read the output"])
    assert.strictEqual(await answer.locator("li code").textContent(), "npm test")
    assert.strictEqual(await answer.locator("strong").textContent(), "output")
    const block = answer.locator(".code-block")
    assert.strictEqual(await block.locator("code").textContent(), "const answer = 42\n")
    assert.strictEqual(await block.locator(".hljs-keyword").first().textContent(), "const")
    await block.getByRole("button", { name: "Copy code" }).waitFor()
    // Inert: no script element, no handler attribute, no javascript: link — in the answer and in the tool's output.
    const transcript = page.locator("#transcript")
    assert.strictEqual(await transcript.locator("script").count(), 0)
    assert.strictEqual(await transcript.locator("[onerror]").count(), 0)
    assert.strictEqual(await transcript.locator("a[href^='javascript']").count(), 0)
    const output = page.locator("[data-call=call_echo] .output")
    assert.strictEqual(await output.textContent(), payload, "the tool's output is text, shown as is")
    assert.strictEqual(await output.locator("*").count(), 0)
    assert.isUndefined(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned))
    // The card, collapsed, is one line: the tool, the command, how it ended.
    assert.match(await page.locator("[data-call=call_echo] summary").textContent() ?? "", /^Bash printf .* · exit 0 · \d/)
    await page.close()
  })

  it("y, a and n answer the focused question; parallel questions wait in a queue, one asked at a time", async () => {
    Fs.writeFileSync(Path.join(world.workspace, "q.txt"), "one\ntwo\nthree\n")
    await inScope(world.model.enqueue(
      Reply.toolCalls([
        { id: "call_q1", name: "Read", args: { file_path: "q.txt" } },
        { id: "call_q2", name: "Bash", args: { command: "echo hi" } },
        { id: "call_q3", name: "LS", args: {} }
      ]),
      Reply.text("Answered.")
    ))
    const page = await world.browser.newPage()
    await newConversation(page, world.web.url)
    await send(page, "three calls")
    const question = (id: string) => page.locator(`[data-call=${id}] .approval`)
    await question("call_q1").waitFor()
    assert.isAtMost(await page.locator(".approval").count(), 1, "one question is asked at a time")
    await question("call_q1").focus()
    await page.keyboard.press("y")
    await page.locator("[data-call=call_q1]").getByText("allowed by you").waitFor()
    await question("call_q2").waitFor()
    assert.include(await question("call_q2").textContent(), "echo hi", "the command is shown before the buttons")
    await question("call_q2").focus()
    await page.keyboard.press("a")
    await page.locator("[data-call=call_q2]").getByText("allowed always by you").waitFor()
    await question("call_q3").focus()
    await page.keyboard.press("n")
    await page.locator("[data-call=call_q3]").getByText("denied by you").waitFor()
    await page.getByText("Answered.").waitFor()
    assert.match(await page.locator("[data-call=call_q1] summary").textContent() ?? "", /^Read q\.txt · 3 lines/)
    assert.match(await page.locator("[data-call=call_q3] summary").textContent() ?? "", /denied/)
    await page.close()
  })

  it("the token total is the host's: the same after two reloads, and what GET /v1/usage and `baton usage` report", async () => {
    await inScope(world.model.enqueue(
      Reply.toolCalls([{ id: "call_u", name: "LS", args: {} }]),
      Reply.text("Listed."),
      Reply.text("Second.")
    ))
    const page = await world.browser.newPage()
    const id = await newConversation(page, world.web.url)
    await send(page, "list")
    await button(page, "Allow").click()
    await page.getByText("Listed.").waitFor()
    await waitIdle(page)
    await send(page, "again")
    await page.getByText("Second.").waitFor()
    await waitIdle(page)
    const live = await shownTokens(page)
    assert.isAbove(live, 0)
    await page.reload()
    await page.getByText("Second.").waitFor()
    const once = await shownTokens(page)
    await page.reload()
    await page.getByText("Second.").waitFor()
    const twice = await shownTokens(page)
    const report = (await (await fetch(`${world.web.origin}/v1/usage?conversation=${id}`)).json()) as {
      readonly total: { readonly input_tokens: number; readonly output_tokens: number; readonly requests: number }
    }
    assert.deepStrictEqual([live, once, twice], [live, live, live])
    assert.strictEqual(twice, report.total.input_tokens + report.total.output_tokens)
    assert.strictEqual(report.total.requests, 3)
    assert.include(await page.getByLabel("Token usage").textContent(), "in 3 requests")
    const cli = await inScope(runCli(["usage", "--json", "--conversation", id, "--home", world.home], { env: world.model.childEnv("anthropic") }))
    const printed = JSON.parse(cli.stdout) as { readonly total: { readonly input_tokens: number; readonly output_tokens: number } }
    assert.strictEqual(printed.total.input_tokens + printed.total.output_tokens, twice)
    await page.close()
  })

  it("a turn that arrives in one burst keeps its text above its tool card", async () => {
    await inScope(world.model.enqueue(
      Reply.scenario({ text: ["Let me look around first."], toolCalls: [{ id: "call_burst", name: "LS", args: {} }] }),
      Reply.text("Looked.")
    ))
    const page = await world.browser.newPage()
    await newConversation(page, world.web.url)
    await send(page, "burst")
    await button(page, "Allow").waitFor()
    const order = await page.locator("#transcript > *").evaluateAll((nodes) => nodes.map((n) => n.getAttribute("data-call") ?? n.textContent))
    const text = order.findIndex((t) => t?.includes("Let me look around first.") === true)
    assert.isAtLeast(text, 0)
    assert.isAbove(order.indexOf("call_burst"), text, "the card comes after the text")
    await button(page, "Allow").click()
    await page.getByText("Looked.").waitFor()
    await page.close()
  })

  it("the list: the first prompt's opening words, how long ago, a waiting badge, a search box; a command's colours; the header panel", async () => {
    await inScope(world.model.enqueue(
      Reply.toolCalls([{ id: "call_colour", name: "Bash", args: { command: "printf '\\033[31mred\\033[0m plain'" } }]),
      Reply.text("Coloured.")
    ))
    const page = await world.browser.newPage()
    const id = await newConversation(page, world.web.url)
    await send(page, "print something in red, then something plain, and tell me what you saw")
    await button(page, "Allow").waitFor()
    const list = page.getByRole("navigation", { name: "Conversations" })
    const item = list.locator(`[title="${id}"]`)
    await item.locator(".badge.waiting").waitFor()
    assert.strictEqual(await item.locator(".label").textContent(), "print something in red, then something plain, and tell me…")
    assert.strictEqual(await item.locator("time").textContent(), "just now")
    await button(page, "Allow").click()
    await page.getByText("Coloured.").waitFor()
    const output = page.locator("[data-call=call_colour] .terminal.output")
    assert.strictEqual(await output.locator(".ansi-1").textContent(), "red")
    assert.strictEqual(await output.textContent(), "red plain", "the escape codes themselves are not shown")
    await item.locator(".badge").waitFor({ state: "detached" })
    const search = page.getByRole("searchbox", { name: "Search conversations" })
    await search.fill("in red")
    assert.strictEqual(await list.getByRole("button").count(), 1)
    await search.fill("nothing is called this")
    assert.strictEqual(await list.getByRole("button").count(), 0)
    await page.getByText("No conversation matches.").waitFor()
    await page.locator("#panel summary").click()
    const panel = page.locator("#panel-body")
    assert.include(await panel.textContent(), "mock-model")
    assert.include(await panel.textContent(), world.workspace)
    await page.close()
  })

  it("an image a tool returns is shown inline in its card", async () => {
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    Fs.writeFileSync(Path.join(world.workspace, "dot.png"), Buffer.from(png, "base64"))
    await inScope(world.model.enqueue(Reply.toolCalls([{ id: "call_img", name: "Read", args: { file_path: "dot.png" } }]), Reply.text("A dot.")))
    const page = await world.browser.newPage()
    await newConversation(page, world.web.url)
    await send(page, "look at dot.png")
    await button(page, "Allow").click()
    await page.getByText("A dot.").waitFor()
    await page.locator("[data-call=call_img] summary").click()
    const image = page.getByRole("img", { name: "image 1 from Read" })
    assert.match(await image.getAttribute("src") ?? "", /^data:image\/png;base64,/)
    assert.strictEqual(await image.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth), 1, "the page's CSP lets it load")
    await page.close()
  })

  it("a subagent's work is nested under its Task call (followed live), and it is not in the conversation list", async () => {
    await inScope(world.model.enqueue(
      Reply.toolCalls([{ id: "call_task", name: "Task", args: { description: "count files", prompt: "Count the files." } }]),
      Reply.toolCalls([{ id: "call_child_ls", name: "LS", args: {} }]),
      Reply.text("There are a few files."),
      Reply.text("The subagent counted them.")
    ))
    const page = await world.browser.newPage()
    await newConversation(page, world.web.url)
    await send(page, "delegate")
    await page.locator("[data-call=call_task]").getByRole("button", { name: "Allow", exact: true }).click()
    const nested = page.locator("[data-call=call_task] .subagent")
    const childQuestion = nested.locator("[data-call=call_child_ls] .approval")
    await childQuestion.waitFor({ state: "attached" })
    assert.include(await childQuestion.textContent(), "Subagent «count files» wants to run LS")
    await childQuestion.getByRole("button", { name: "Allow", exact: true }).click()
    await page.getByText("The subagent counted them.").waitFor()
    assert.include(await nested.textContent(), "There are a few files.")
    const child = await nested.getAttribute("data-conversation")
    assert.isString(child)
    const listed = (await (await fetch(`${world.web.origin}/api/conversations`)).json()) as { readonly conversations: ReadonlyArray<{ readonly id: string }> }
    assert.notInclude(listed.conversations.map((c) => c.id), child)
    assert.strictEqual(await page.getByRole("navigation", { name: "Conversations" }).locator(`[title="${child}"]`).count(), 0)
    // After a reload the subagent's work (its own conversation's history) is nested there again.
    await page.reload()
    await page.getByText("The subagent counted them.").waitFor()
    assert.include(await nested.textContent(), "There are a few files.")
    assert.strictEqual(await nested.locator("[data-call=call_child_ls]").count(), 1)
    await page.close()
  })
})
