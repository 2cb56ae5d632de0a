/**
 * A loopback OTLP/HTTP receiver for the benchmarks: accepts every export (200 `{}`) and counts the
 * bytes, so `baton run` can be measured with its spans exported and nothing else in the way.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface OtlpSink {
  readonly url: string
  readonly bytes: () => number
  readonly close: () => Promise<void>
}

export const start = (): Promise<OtlpSink> =>
  new Promise((resolve) => {
    let bytes = 0
    const server = Http.createServer((request, response) => {
      request.on("data", (chunk: Buffer) => (bytes += chunk.length)).on("end", () => response.writeHead(200, { "content-type": "application/json" }).end("{}"))
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        bytes: () => bytes,
        close: () => new Promise((done) => server.close(() => done()))
      }))
  })
