import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Page } from "playwright-core"
import { assert, describe, it } from "vitest"
import { ROOT } from "../support/cliProcess.js"
import { Reply } from "../support/MockModelServer.js"
import { button, newConversation, send, useWebWorld } from "../support/webBrowser.js"
import { haveChromium } from "../support/webProcess.js"

/**
 * How the page of `baton web` looks and reads, in Chromium: no serious or critical axe-core
 * violation (empty, with tool cards, with a question open), a phone-sized screen without sideways
 * scrolling (the list becomes a drawer), the dark theme under prefers-color-scheme: dark. It takes
 * the README's screenshots (BATON_UPDATE_SCREENSHOT=1 copies them into docs/).
 */

const world = useWebWorld("test/web/WebLook.test.ts")
const { inScope } = world

interface AxeResult {
  readonly violations: ReadonlyArray<{ readonly id: string; readonly impact?: string | null; readonly nodes: ReadonlyArray<{ readonly target: ReadonlyArray<string> }> }>
}

/** axe-core, from the package, run in the page: the serious and critical violations, named. */
const axeViolations = async (page: Page) => {
  await page.evaluate(Fs.readFileSync(Path.join(ROOT, "node_modules", "axe-core", "axe.min.js"), "utf8"))
  const result = await page.evaluate(() => (globalThis as unknown as { axe: { run: () => Promise<AxeResult> } }).axe.run())
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`)
}

const background = (page: Page) =>
  page.locator("body").evaluate((body) =>
    (globalThis as unknown as { getComputedStyle: (e: unknown) => { backgroundColor: string } }).getComputedStyle(body).backgroundColor
  )

const GREET = "function greet(name) {\n  return 'Hello ' + name\n}\n\nconsole.log(greet('world'))\n"

/** A task with the usual tool cards: a read, an edit (asked), a command, and a Markdown answer. */
const toolTask = async (page: Page) => {
  Fs.writeFileSync(Path.join(world.workspace, "greet.js"), GREET)
  await inScope(world.model.enqueue(
    Reply.toolCalls([{ id: "call_read", name: "Read", args: { file_path: "greet.js" } }]),
    Reply.text("The greeting lacks punctuation; I will fix it.", {
      toolCalls: [{ id: "call_edit", name: "Edit", args: { file_path: "greet.js", old_string: "return 'Hello ' + name", new_string: "return `Hello, ${name}!`" } }]
    }),
    Reply.toolCalls([{ id: "call_run", name: "Bash", args: { command: "node greet.js", description: "Run the script" } }]),
    Reply.text(
      [
        "Done. `greet` now uses a template literal:",
        "",
        "```js",
        "function greet(name) {",
        "  return `Hello, ${name}!`",
        "}",
        "```",
        "",
        "- **Read** the file first",
        "- **Edited** one line",
        "- ran it: prints `Hello, world!`"
      ].join("\n"),
      { reasoning: { text: "The user wants a friendlier greeting with a comma and an exclamation mark." } }
    )
  ))
  await send(page, "make the greeting friendlier and run it")
  await button(page, "Allow").click()
  await page.locator("[data-call=call_edit] .approval").waitFor()
}

describe.skipIf(!haveChromium)("the look of baton web", () => {
  it("axe-core finds no serious or critical violation: empty, a question open, tool cards; light and dark screenshots", async () => {
    const page = await world.browser.newPage()
    // The CSP (no inline script or style, no eval) holds: the browser reports any breach on the console.
    const breaches: Array<string> = []
    page.on("console", (m) => {
      if (m.text().includes("Content Security Policy")) breaches.push(m.text())
    })
    await newConversation(page, world.web.url)
    assert.deepStrictEqual(await axeViolations(page), [], "the empty page")
    await toolTask(page)
    assert.deepStrictEqual(await axeViolations(page), [], "an open question")
    await page.locator("[data-call=call_edit] .approval").focus()
    await page.keyboard.press("y")
    await button(page, "Allow").click()
    await page.getByText("ran it: prints").waitFor()
    await button(page, "Send").waitFor()
    await page.locator("[data-call=call_edit] summary").click()
    await page.locator("[data-call=call_run] summary").click()
    assert.deepStrictEqual(await axeViolations(page), [], "a transcript with tool cards")
    assert.match(await page.locator("[data-call=call_edit] summary").textContent() ?? "", /^Edit greet\.js · \+1 −1/)
    await inScope(world.model.enqueue(Reply.text("Friendlier greeting")))
    await button(page, "Name it").click()
    await page.getByRole("heading", { name: "Friendlier greeting" }).waitFor()
    await page.setViewportSize({ width: 1200, height: 900 })
    await page.locator("#transcript").evaluate((t) => (t.scrollTop = t.scrollHeight))
    const shots: Array<[string, string]> = []
    for (const scheme of ["light", "dark"] as const) {
      // No transitions: the picture shows the theme, not a fade between the two.
      await page.emulateMedia({ colorScheme: scheme, reducedMotion: "reduce" })
      const shot = Path.join(world.tmp, `web-page-${scheme}.png`)
      await page.screenshot({ path: shot })
      assert.isTrue(Fs.statSync(shot).size > 10_000)
      shots.push([shot, scheme === "light" ? "web-page.png" : "web-page-dark.png"])
    }
    assert.deepStrictEqual(breaches, [])
    if (process.env["BATON_UPDATE_SCREENSHOT"] !== undefined) for (const [shot, name] of shots) Fs.copyFileSync(shot, Path.join(ROOT, "docs", name))
    await page.close()
  })

  it("prefers-color-scheme: dark gives the dark theme, light the light one", async () => {
    const page = await world.browser.newPage()
    await page.emulateMedia({ colorScheme: "dark" })
    await page.goto(world.web.url)
    assert.strictEqual(await background(page), "rgb(18, 19, 22)")
    await page.emulateMedia({ colorScheme: "light" })
    assert.strictEqual(await background(page), "rgb(247, 247, 248)")
    await page.close()
  })

  it("at 375 × 812 nothing scrolls sideways and the list is a drawer", async () => {
    const page = await world.browser.newPage()
    await page.setViewportSize({ width: 375, height: 812 })
    // The drawer slides in unless motion is reduced: reduced, it is where it goes at once.
    await page.emulateMedia({ reducedMotion: "reduce" })
    await page.goto(world.web.url)
    await page.locator("[data-call=call_edit]").first().waitFor()
    const overflow = () => page.evaluate(() => {
      const root = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document.documentElement
      return root.scrollWidth - root.clientWidth
    })
    assert.strictEqual(await overflow(), 0)
    const transcript = page.locator("#transcript")
    assert.isTrue(await transcript.evaluate((t) => t.scrollWidth <= t.clientWidth), "the transcript does not scroll sideways")
    const list = page.getByRole("navigation", { name: "Conversations" })
    assert.isFalse(await list.isVisible() && (await list.boundingBox())!.x >= 0, "the list starts closed")
    await button(page, "Conversations list").click()
    await list.getByRole("button").first().waitFor()
    assert.isAtLeast((await list.boundingBox())!.x, 0)
    assert.strictEqual(await overflow(), 0)
    await page.close()
  })
})
