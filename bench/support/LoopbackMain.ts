/**
 * The loopback model as a process of its own (`node --import tsx LoopbackMain.ts '<options JSON>'`),
 * so that writing thousands of deltas a second does not share an event loop with what is measured.
 * Prints `{"baseUrl": …}` on one line once it listens; exits when its stdin closes.
 */
import { start } from "./LoopbackModel.js"

const options = JSON.parse(process.argv[2] ?? "{}")
const count = Number(options.count ?? 0)
const model = await start({ ...options, deltas: Array.from({ length: count }, (_, i) => `w${i} `) })
process.stdout.write(`${JSON.stringify({ baseUrl: model.baseUrl })}\n`)
process.stdin.resume()
process.stdin.on("end", () => void model.close().then(() => process.exit(0)))
