// Builds what `npm ci` leaves behind (the `prepare` script runs this, then tsc for the .d.ts files):
//
// dist/bin/  the `baton` bin: an esbuild bundle of src/bin.ts. A bundle starts several times faster
//            than the same code as separate modules (bench/startup.ts). Code splitting keeps
//            `baton run --help` to @effect/cli and the command definitions; a command's body
//            (SQLite, providers, tools) is a chunk loaded when it runs. better-sqlite3 stays external
//            (a native addon), and `require` is provided for the CommonJS code inside the bundle.
// dist/lib/  every module of src/ as plain ESM (one file each), what package.json `exports` maps:
//            `import { open } from "baton/Session"`. Types: dist/types/ (tsc -p tsconfig.build.json).
// dist/page/ the page of `baton web` (scripts/build-page.mjs).
import { build } from "esbuild"
import { readdirSync, readFileSync, rmSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { buildPage } from "./build-page.mjs"

const root = fileURLToPath(new URL("..", import.meta.url))
const sources = (dir) =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

// package.json is the version's one source: built in, so `baton --version` reads no file.
const define = { BATON_VERSION: JSON.stringify(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version) }

for (const dir of ["dist/bin", "dist/lib"]) rmSync(join(root, dir), { recursive: true, force: true })

await Promise.all([
  build({
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
    define,
    banner: { js: "import { createRequire as __batonRequire } from 'node:module'; const require = __batonRequire(import.meta.url);" },
    logLevel: "warning"
  }),
  build({
    absWorkingDir: root,
    entryPoints: sources("src").filter((file) => !["src/bin.ts", "src/main.ts"].includes(relative(root, join(root, file)))),
    outbase: "src",
    outdir: "dist/lib",
    bundle: false,
    define,
    platform: "node",
    format: "esm",
    target: "node20",
    sourcemap: true,
    logLevel: "warning"
  }),
  buildPage(root)
])
