// Builds the `baton` bin: an esbuild bundle of src/main.ts in dist/bin/ (bench/startup.ts measures
// why: a bundle starts several times faster than the same code as separate modules). Code splitting
// keeps `baton --help` to @effect/cli and the command definitions; a command's body (SQLite, the
// providers, the tools) is a chunk loaded when it runs. better-sqlite3 stays external (a native
// addon), and `require` is provided for the CommonJS code inside the bundle.
import { rmSync } from "node:fs"
import { build } from "esbuild"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))

rmSync(new URL("../dist/bin", import.meta.url), { recursive: true, force: true })

await build({
  absWorkingDir: root,
  entryPoints: { baton: "src/bin.ts" },
  outdir: "dist/bin",
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minify: true,
  sourcemap: "linked",
  external: ["better-sqlite3"],
  banner: { js: "import { createRequire as __batonRequire } from 'node:module'; const require = __batonRequire(import.meta.url);" },
  logLevel: "warning"
})
