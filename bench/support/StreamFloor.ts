/**
 * The floor `stream-5000` is measured against: a bare Node program that makes the same kind of
 * request Baton's openai-chat provider makes, parses the same SSE bytes with the same parser fed the
 * same way (src/services/SseParser.ts, a read at a time), decodes each event's JSON and writes the
 * answer's text to stdout once per network read. No store, no Effect runtime, no event model:
 * what any client of this wire has to pay. bench/main.ts bundles it (as the bin is bundled).
 *
 *   node StreamFloor.mjs <baseUrl> <model>
 */
import { makeSseParser } from "../../src/services/SseParser.js"

interface ChatChunk {
  readonly choices?: ReadonlyArray<{ readonly delta?: { readonly content?: string | null } }>
}

const [baseUrl, model] = process.argv.slice(2)
const response = await fetch(`${baseUrl}/chat/completions`, {
  method: "POST",
  headers: { "content-type": "application/json", accept: "text/event-stream" },
  body: JSON.stringify({
    model,
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "system", content: "You are a benchmark." }, { role: "user", content: "hi" }]
  })
})
const text: Array<string> = []
const parser = makeSseParser()
const decoder = new TextDecoder()
for await (const bytes of response.body as AsyncIterable<Uint8Array>) {
  for (const event of parser.feed(decoder.decode(bytes, { stream: true })).events) {
    if (event.data === "[DONE]") continue
    const content = (JSON.parse(event.data) as ChatChunk).choices?.[0]?.delta?.content
    if (typeof content === "string" && content.length > 0) text.push(content)
  }
  if (text.length > 0) {
    process.stdout.write(text.join(""))
    text.length = 0
  }
}
process.stdout.write("\n")
