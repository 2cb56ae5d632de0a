import * as Effect from "effect/Effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { ConfigError } from "../../domain/Errors.js"
import type { ImagePart } from "../../domain/Messages.js"
import { imageTypeOf, MAX_IMAGE_BYTES } from "../../services/tools/Read.js"

/** Images a prompt attaches: `baton run --image FILE`, `@path/to/file.png` in chat. */

/** One image file, checked: PNG, JPEG, GIF or WebP by content, within the size an image may have. */
export const readImage = (file: string, cwd: string): Effect.Effect<ImagePart, ConfigError> =>
  Effect.gen(function*() {
    const path = Path.resolve(cwd, file)
    const fail = (message: string) => new ConfigError({ source: "command line", field: "--image", message })
    const bytes = yield* Effect.try({ try: () => Fs.readFileSync(path), catch: () => fail(`cannot read the image ${file}`) })
    const type = imageTypeOf(bytes)
    if (type === undefined) return yield* fail(`${file} is not a PNG, JPEG, GIF or WebP image`)
    if (bytes.length > MAX_IMAGE_BYTES) return yield* fail(`${file} is ${bytes.length} bytes; an image may have at most ${MAX_IMAGE_BYTES}`)
    return { media_type: type, data: bytes.toString("base64") }
  })

const MENTION = /(^|\s)@(\S+\.(?:png|jpe?g|gif|webp))\b/gi

/** The `@file.png` mentions of a chat line that name image files (relative to the workspace). */
export const mentionedImages = (line: string, workspace: string): ReadonlyArray<string> =>
  [...line.matchAll(MENTION)].map((m) => m[2]!).filter((file) => Fs.existsSync(Path.resolve(workspace, file)))
