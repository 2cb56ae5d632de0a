import { Effect, Exit, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type BrowserContext, chromium, type Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { ROOT } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { CHROMIUM, CHROMIUM_FLAGS, haveChromium, startWeb } from "../support/webProcess.js"

/**
 * `baton web` in a real Chromium (Debian's /usr/bin/chromium driven by playwright-core) against a
 * real `baton web` child process and the loopback mock model. One browser for the file, pages
 * reused where they can be: these are the slowest tests of the suite, kept few.
 */

if (!haveChromium) {
  if (process.env["CI"] !== undefined) throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install -y chromium)`)
  console.warn(`test/web: skipped, ${CHROMIUM} is not installed (apt-get install -y chromium)`)
}

const scope = Effect.runSync(Scope.make())
const inScope = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Effect.runPromise(Scope.extend(effect, scope))

let browser: BrowserContext
let tmp: string
let model: MockModelServer.MockModelServer
let web: Effect.Effect.Success<ReturnType<typeof startWeb>>
let workspace: string
let home: string

const message = (page: Page) => page.getByRole("textbox", { name: "Message" })
const button = (page: Page, name: string) => page.getByRole("button", { name, exact: true })

const newConversation = async (page: Page) => {
  await page.goto(web.url)
  const before = page.url()
  await button(page, "New conversation").click()
  await page.waitForURL((url) => url.hash.startsWith("#conv-") && url.toString() !== before)
  return new URL(page.url()).hash.slice(1)
}

const send = async (page: Page, text: string) => {
  await message(page).fill(text)
  await button(page, "Send").click()
}

beforeAll(async () => {
  if (!haveChromium) return
  tmp = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-web-"))
  workspace = Fs.realpathSync(Fs.mkdirSync(Path.join(tmp, "ws"), { recursive: true }) ?? Path.join(tmp, "ws"))
  home = Path.join(tmp, "home")
  model = await inScope(MockModelServer.make())
  web = await inScope(startWeb(["--port", "0", "-w", workspace, "--home", home], model.childEnv("anthropic")))
  browser = await chromium.launchPersistentContext(Path.join(tmp, "profile"), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1100, height: 760 }
  })
  browser.setDefaultTimeout(10_000)
  browser.on("page", (page) => {
    page.on("pageerror", (error) => console.error(`page error: ${error.message}`))
    page.on("console", (m) => (m.type() === "error" ? console.error(`page console: ${m.text()}`) : undefined))
  })
})

afterAll(async () => {
  await browser?.close()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  if (tmp !== undefined) Fs.rmSync(tmp, { recursive: true, force: true })
})

describe.skipIf(!haveChromium)("baton web in Chromium", () => {
  it("a tool task approved by clicking Allow: arguments, results, the edit's diff, reasoning collapsed, usage; a screenshot", async () => {
    Fs.writeFileSync(Path.join(workspace, "a.txt"), "alpha\n")
    await inScope(model.enqueue(
      Reply.toolCalls([{ id: "call_read", name: "Read", args: { file_path: "a.txt" } }]),
      Reply.toolCalls([{ id: "call_edit", name: "Edit", args: { file_path: "a.txt", old_string: "alpha", new_string: "beta" } }]),
      Reply.text("I changed alpha to beta in a.txt.", { reasoning: { text: "The file says alpha; the user wants beta." } })
    ))
    const page = await browser.newPage()
    await newConversation(page)
    await send(page, "change alpha to beta in a.txt")
    await button(page, "Allow").click()
    // The second call is asked in its turn; "Allow always" grants Edit for the session.
    await page.locator("[data-call=call_edit]").getByRole("button", { name: "Allow always" }).click()
    await page.getByText("I changed alpha to beta in a.txt.").waitFor()
    assert.strictEqual(Fs.readFileSync(Path.join(workspace, "a.txt"), "utf8"), "beta\n")
    const read = page.locator("[data-call=call_read]")
    assert.include(await read.textContent(), "allowed by you")
    assert.include(await read.locator(".result").textContent(), "alpha")
    const edit = page.locator("[data-call=call_edit]")
    assert.strictEqual(await edit.locator(".diff .del").first().textContent(), "- alpha\n")
    assert.strictEqual(await edit.locator(".diff .add").first().textContent(), "+ beta\n")
    assert.include(await edit.textContent(), "allowed always by you")
    const reasoning = page.locator("details.reasoning")
    assert.isFalse(await reasoning.evaluate((d) => d.hasAttribute("open")), "reasoning is collapsed")
    assert.include(await reasoning.textContent(), "The file says alpha")
    assert.match(await page.getByLabel("Token usage").textContent() ?? "", /this task: 45 tokens · conversation: 45 tokens in 3 requests/)
    await button(page, "Send").waitFor()
    const shot = Path.join(tmp, "finished-task.png")
    await page.screenshot({ path: shot })
    assert.isTrue(Fs.statSync(shot).size > 10_000)
    if (process.env["BATON_UPDATE_SCREENSHOT"] !== undefined) Fs.copyFileSync(shot, Path.join(ROOT, "docs", "web-page.png"))
    await page.close()
  })
})
