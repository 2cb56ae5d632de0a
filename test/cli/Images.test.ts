import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { IMAGE_OMITTED_TEXT } from "../../src/domain/Messages.js"
import { mentionedImages } from "../../src/programs/cli/Images.js"
import { cliDirs, runCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"

/** Images through the built CLI and real HTTP: a prompt's `--image`, a Read of a PNG, a 413 retried without them. */

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])
const BASE64 = PNG.toString("base64")

describe("images (built CLI, loopback model)", () => {
  it.scopedLive("run --image: the request carries the image; a 413 is retried once with a placeholder instead (Responses wire)", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      Fs.writeFileSync(Path.join(dirs.workspace, "shot.png"), PNG)
      const server = yield* MockModelServer.make({ replies: [Reply.status(413), Reply.text("Too big to see, sorry.")] })
      const env = { ...server.childEnv("openai-responses"), BATON_HOME: dirs.home }
      const result = yield* runCli(["run", "-w", dirs.workspace, "--image", "shot.png", "what is this?"], { env, cwd: dirs.workspace })
      assert.strictEqual(result.code, 0, result.stderr)
      const [first, second] = yield* server.requests
      assert.include(first!.body, `"type":"input_image","image_url":"data:image/png;base64,${BASE64}"`)
      assert.notInclude(second!.body, BASE64)
      assert.include(second!.body, IMAGE_OMITTED_TEXT)
      const bad = yield* runCli(["run", "-w", dirs.workspace, "--image", "nope.txt", "x"], { env, cwd: dirs.workspace })
      assert.strictEqual(bad.code, 2)
      assert.include(bad.stderr, "cannot read the image nope.txt")
    }))

  it.scopedLive("Read of a PNG returns an image to the model (Anthropic wire: an image block inside the tool_result)", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      Fs.writeFileSync(Path.join(dirs.workspace, "shot.png"), PNG)
      const server = yield* MockModelServer.make({
        replies: [Reply.toolCalls([{ id: "call_1", name: "Read", args: { file_path: "shot.png" } }]), Reply.text("A tiny PNG.")]
      })
      const env = { ...server.childEnv("anthropic"), BATON_HOME: dirs.home }
      const result = yield* runCli(["run", "--approve", "allow", "-w", dirs.workspace, "look at shot.png"], { env })
      assert.strictEqual(result.code, 0, result.stderr)
      const body = JSON.parse((yield* server.requests)[1]!.body) as { messages: ReadonlyArray<{ role: string; content: ReadonlyArray<Record<string, unknown>> }> }
      const toolResult = body.messages.at(-1)!.content.find((block) => block["type"] === "tool_result")!
      assert.deepStrictEqual(toolResult["content"], [
        { type: "text", text: "[image: shot.png, image/png, 16 bytes]" },
        { type: "image", source: { type: "base64", media_type: "image/png", data: BASE64 } }
      ])
    }))

  it.scoped("chat's @path mentions name the image files that exist in the workspace", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      Fs.mkdirSync(Path.join(dirs.workspace, "docs"))
      Fs.writeFileSync(Path.join(dirs.workspace, "docs", "ui.png"), PNG)
      assert.deepStrictEqual(mentionedImages("compare @docs/ui.png with @missing.png, mail me@example.com", dirs.workspace), ["docs/ui.png"])
    }))
})
