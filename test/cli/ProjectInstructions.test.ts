import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { findInstructions, withInstructions } from "../../src/programs/cli/ProjectInstructions.js"
import { cliDirs, runCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { runInPty } from "../support/ptyProcess.js"
import { tempDir } from "../support/tempDir.js"
import { startWeb } from "../support/webProcess.js"

/**
 * AGENTS.md (or a directory's CLAUDE.md): the user's own, then the repository root's down to the
 * workspace's, the closest last, in a new conversation's system prompt; off with
 * --no-project-instructions or `"projectInstructions": false`.
 */

const put = (path: string, text: string) => {
  Fs.mkdirSync(Path.dirname(path), { recursive: true })
  Fs.writeFileSync(path, text)
}

/** home/AGENTS.md; repo/.git, repo/AGENTS.md, repo/pkg/CLAUDE.md, repo/pkg/app/{AGENTS.md,CLAUDE.md}. */
const layout = (root: string) => {
  const home = Path.join(root, "home")
  const repo = Path.join(root, "repo")
  const workspace = Path.join(repo, "pkg", "app")
  put(Path.join(home, "AGENTS.md"), "Mine: answer in English.")
  Fs.mkdirSync(Path.join(repo, ".git"), { recursive: true })
  put(Path.join(repo, "AGENTS.md"), "Repo: use tabs.")
  put(Path.join(repo, "pkg", "CLAUDE.md"), "Package: run npm test.")
  put(Path.join(workspace, "AGENTS.md"), "App: use spaces.")
  put(Path.join(workspace, "CLAUDE.md"), "App (Claude): never read.")
  return { home, repo, workspace }
}

const systemOf = (request: MockModelServer.RecordedRequest): string =>
  (JSON.parse(request.body) as { messages: ReadonlyArray<{ role: string; content: string }> }).messages.find((m) => m.role === "system")?.content ?? ""

describe("project instructions", () => {
  it.scoped("from the user's file and the repository root down to the workspace, the closest last; CLAUDE.md only where no AGENTS.md", () =>
    Effect.gen(function*() {
      const { home, repo, workspace } = layout(yield* tempDir)
      const files = yield* findInstructions(home, workspace)
      assert.deepStrictEqual(files.map((f) => f.path), [
        Path.join(home, "AGENTS.md"),
        Path.join(repo, "AGENTS.md"),
        Path.join(repo, "pkg", "CLAUDE.md"),
        Path.join(workspace, "AGENTS.md")
      ])
      const prompt = withInstructions("BASE", files)
      assert.isTrue(prompt.startsWith("BASE\n"))
      assert.isBelow(prompt.indexOf("Repo: use tabs."), prompt.indexOf("App: use spaces."))
      assert.include(prompt, `## ${Path.join(workspace, "AGENTS.md")}\n\nApp: use spaces.`)
      assert.notInclude(prompt, "never read")
      // Outside a repository: the workspace's own file only, never a parent's.
      Fs.rmSync(Path.join(repo, ".git"), { recursive: true })
      assert.deepStrictEqual((yield* findInstructions(home, workspace)).map((f) => f.path), [Path.join(home, "AGENTS.md"), Path.join(workspace, "AGENTS.md")])
    }))

  it.scopedLive("baton run: a new conversation's system prompt has them and stderr names them; the option and the settings key turn them off", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const { home, workspace } = layout(dirs.root)
      const model = yield* MockModelServer.make({ replies: [Reply.text("a"), Reply.text("b"), Reply.text("c"), Reply.text("d")] })
      const env = { ...model.childEnv("openai-chat"), BATON_HOME: home }
      const first = yield* runCli(["run", "-w", workspace, "hi"], { env })
      assert.strictEqual(first.code, 0, first.stderr)
      assert.include(first.stderr, `instructions: ${Path.join(home, "AGENTS.md")}, ${Path.join(dirs.root, "repo", "AGENTS.md")}, ${Path.join(dirs.root, "repo", "pkg", "CLAUDE.md")}, AGENTS.md\n`)
      // A continued conversation keeps the prompt it was created with.
      put(Path.join(workspace, "AGENTS.md"), "App: changed since.")
      const continued = yield* runCli(["run", "-c", "-w", workspace, "again"], { env })
      assert.strictEqual(continued.code, 0, continued.stderr)
      assert.notInclude(continued.stderr, "instructions:")
      const off = yield* runCli(["run", "--no-project-instructions", "-w", workspace, "hi"], { env })
      assert.strictEqual(off.code, 0, off.stderr)
      assert.notInclude(off.stderr, "instructions:")
      put(Path.join(workspace, ".baton", "settings.json"), JSON.stringify({ projectInstructions: false }))
      const offBySettings = yield* runCli(["run", "-w", workspace, "hi"], { env })
      assert.strictEqual(offBySettings.code, 0, offBySettings.stderr)
      const [withThem, kept, without, withoutBySettings] = (yield* model.requests).map(systemOf)
      assert.include(withThem, "Mine: answer in English.")
      assert.isBelow(withThem!.indexOf("Repo: use tabs."), withThem!.indexOf("Package: run npm test."))
      assert.isBelow(withThem!.indexOf("Package: run npm test."), withThem!.indexOf("App: use spaces."))
      assert.strictEqual(kept, withThem)
      assert.notInclude(without, "Repo: use tabs.")
      assert.notInclude(withoutBySettings, "Repo: use tabs.")
      assert.include(without, "You are Baton")
    }))

  it.scopedLive("chat's header names them for a new conversation", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const { home, workspace } = layout(dirs.root)
      const model = yield* MockModelServer.make({ replies: [] })
      const result = yield* runInPty(["chat", "-w", workspace], [
        { expect: "new conversation" },
        // The line may wrap at the terminal's width.
        { expect: "instructions: .*/home/AGENTS\\.md, .*/repo/AGENTS\\.md, " },
        { expect: "CLAUDE\\.md, AGENTS\\.md" },
        { send: "/exit\r" },
        { wait_exit: true }
      ], { ...model.childEnv("openai-chat"), BATON_HOME: home })
      assert.isTrue(result.ok, `${result.reason}\n${result.transcript}`)
    }))

  it.scopedLive("baton web serves their paths for the page's header (none with --no-project-instructions)", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const { home, workspace } = layout(dirs.root)
      const model = yield* MockModelServer.make({ replies: [] })
      const paths = (web: { readonly origin: string }) =>
        Effect.promise(() => fetch(`${web.origin}/api/info`).then((r) => r.json() as Promise<{ readonly instructions: ReadonlyArray<string> }>))
      const on = yield* startWeb(["--port", "0", "-w", workspace, "--home", home], model.childEnv("openai-chat"))
      assert.deepStrictEqual((yield* paths(on)).instructions, [
        Path.join(home, "AGENTS.md"),
        Path.join(dirs.root, "repo", "AGENTS.md"),
        Path.join(dirs.root, "repo", "pkg", "CLAUDE.md"),
        Path.join(workspace, "AGENTS.md")
      ])
      yield* on.stop
      const off = yield* startWeb(["--port", "0", "--no-project-instructions", "-w", workspace, "--home", home], model.childEnv("openai-chat"))
      assert.deepStrictEqual((yield* paths(off)).instructions, [])
    }))
})
