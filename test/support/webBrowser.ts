import { Effect, Exit, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type BrowserContext, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll } from "vitest"
import * as MockModelServer from "./MockModelServer.js"
import { CHROMIUM, CHROMIUM_FLAGS, haveChromium, startWeb } from "./webProcess.js"

/**
 * A browser test file's world: one real `baton web` child process over the loopback mock model, one
 * Chromium (Debian's /usr/bin/chromium driven by playwright-core) and a scratch workspace and home.
 * Registered as the file's beforeAll/afterAll; read its fields inside the tests.
 */
export interface WebWorld {
  readonly tmp: string
  readonly workspace: string
  readonly home: string
  readonly model: MockModelServer.MockModelServer
  readonly web: Effect.Effect.Success<ReturnType<typeof startWeb>>
  readonly browser: BrowserContext
  readonly inScope: <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Promise<A>
}

export const useWebWorld = (name: string): WebWorld => {
  if (!haveChromium) {
    if (process.env["BATON_REQUIRE_CHROMIUM"] !== undefined) throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install -y chromium)`)
    console.warn(`${name}: SKIPPED, ${CHROMIUM} is not installed (apt-get install -y chromium; .ci/run does it)`)
  }
  const scope = Effect.runSync(Scope.make())
  const world = {
    inScope: <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Effect.runPromise(Scope.extend(effect, scope))
  } as { -readonly [K in keyof WebWorld]: WebWorld[K] }
  beforeAll(async () => {
    if (!haveChromium) return
    world.tmp = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-web-"))
    world.workspace = Fs.realpathSync(Fs.mkdirSync(Path.join(world.tmp, "ws"), { recursive: true }) ?? Path.join(world.tmp, "ws"))
    world.home = Path.join(world.tmp, "home")
    world.model = await world.inScope(MockModelServer.make())
    world.web = await world.inScope(startWeb(["--port", "0", "-w", world.workspace, "--home", world.home], world.model.childEnv("anthropic")))
    world.browser = await chromium.launchPersistentContext(Path.join(world.tmp, "profile"), {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_FLAGS,
      viewport: { width: 1100, height: 760 }
    })
    world.browser.setDefaultTimeout(10_000)
    world.browser.on("page", (page) => {
      page.on("pageerror", (error) => console.error(`page error: ${error.message}`))
    })
  })
  afterAll(async () => {
    await world.browser?.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    if (world.tmp !== undefined) Fs.rmSync(world.tmp, { recursive: true, force: true })
  })
  return world
}

export const message = (page: Page) => page.getByRole("textbox", { name: "Message" })
export const button = (page: Page, name: string) => page.getByRole("button", { name, exact: true })

/** Opens the page and creates a conversation with its button; its id. */
export const newConversation = async (page: Page, url: string) => {
  await page.goto(url)
  const [created] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname === "/api/conversations"),
    button(page, "New conversation").click()
  ])
  const { conversation } = (await created.json()) as { readonly conversation: { readonly id: string } }
  await page.waitForURL((u) => u.hash === `#${conversation.id}`)
  return conversation.id
}

export const send = async (page: Page, text: string) => {
  await message(page).fill(text)
  await button(page, "Send").click()
}
