/**
 * Records demo/cassette.jsonl, the "model" of `baton demo`. There is no real model here: the turns
 * below are a script, played by ProviderScripted through ProviderCassette's recorder while the demo
 * itself runs (real store, real tools, real shell), so the cassette holds exactly the requests the
 * demo makes. Replay matches requests by what the model sees, so re-record after changing anything
 * the model sees (the system prompt, a tool's description or output format, the demo workspace):
 *
 *   npx tsx scripts/record-demo.ts
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Layer from "effect/Layer"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { demo } from "../src/programs/cli/Commands.js"
import { layerRecord } from "../src/services/provider/Cassette.js"
import { layerScripted, Turn } from "../src/services/provider/Scripted.js"

const words = (text: string): ReadonlyArray<string> => text.match(/\S+\s*|\s+/g) ?? []

const OLD = `    .replace(/[^a-z0-9]/g, "-")\n`
const NEW = `    .replace(/[^a-z0-9]+/g, "-")\n    .replace(/^-+|-+$/g, "")\n`

const script = [
  Turn.make({
    reasoning: { text: words("The user says the tests fail. Before reading any code I should run them and see which cases break.") },
    text: words("I'll start by running the tests to see what fails."),
    toolCalls: [{ id: "call_run_tests", name: "Bash", args: { command: "node test.js", description: "Run the slug tests" } }],
    usage: { inputTokens: 1840, outputTokens: 71 }
  }),
  Turn.make({
    text: words("Two of four cases fail: the spaces around a title become dashes at both ends, and \"&\" with its spaces becomes three dashes. Let me read the implementation and the tests."),
    toolCalls: [
      { id: "call_read_slug", name: "Read", args: { file_path: "src/slug.js" } },
      { id: "call_read_test", name: "Read", args: { file_path: "test.js" } }
    ],
    usage: { inputTokens: 2012, outputTokens: 88 }
  }),
  Turn.make({
    reasoning: { text: words("Each non-alphanumeric character becomes its own dash, so runs of separators become runs of dashes, and nothing trims the ends. Collapse runs with a + quantifier, then strip dashes at both ends.") },
    text: words("`slugify` replaces every character outside a-z0-9 with its own dash, so a run of separators turns into a run of dashes, and nothing trims the ends. I'll collapse each run into one dash and strip dashes from both ends."),
    toolCalls: [{ id: "call_fix", name: "Edit", args: { file_path: "src/slug.js", old_string: OLD, new_string: NEW } }],
    usage: { inputTokens: 2655, outputTokens: 143 }
  }),
  Turn.make({
    text: words("Now the tests again:"),
    toolCalls: [{ id: "call_rerun", name: "Bash", args: { command: "node test.js", description: "Run the slug tests again" } }],
    usage: { inputTokens: 2840, outputTokens: 40 }
  }),
  Turn.make({
    text: words(
      "All four cases pass. The fix is in `src/slug.js`:\n\n" +
        "- `/[^a-z0-9]+/g` turns each run of other characters into a single `-`;\n" +
        "- a second replace strips `-` from both ends.\n\n" +
        "Nothing else changed.\n"
    ),
    usage: { inputTokens: 2968, outputTokens: 62 }
  })
]

const cassette = Path.join(import.meta.dirname, "..", "demo", "cassette.jsonl")
Fs.writeFileSync(cassette, "")
const provider = layerRecord(cassette).pipe(Layer.provide([layerScripted(script), NodeFileSystem.layer]))

NodeRuntime.runMain(demo({ fast: true }, provider))
