/**
 * A loopback TCP proxy in front of a database that holds every packet `delayMs` in each direction
 * (a database one network hop away) and counts the packets the client sends it: with the wire's
 * request/response rhythm, each is one round trip the client waited for.
 */
import { Effect } from "effect"
import * as Net from "node:net"

export interface DelayProxy {
  readonly port: number
  /** Packets from the clients to the database so far. */
  readonly sent: () => number
}

export const delayProxy = (target: { readonly host: string; readonly port: number }, delayMs: number) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<DelayProxy & { readonly close: () => void }>((resolve) => {
        let sent = 0
        const sockets = new Set<Net.Socket>()
        // Timers of one delay fire in the order they were set: each direction keeps its byte order.
        const forward = (from: Net.Socket, to: Net.Socket, counted: boolean) =>
          from.on("data", (bytes) => {
            if (counted) sent++
            setTimeout(() => to.writable && to.write(bytes), delayMs)
          })
        const server = Net.createServer((client) => {
          const upstream = Net.connect(target.port, target.host)
          for (const s of [client, upstream]) {
            sockets.add(s)
            s.setNoDelay(true)
            s.on("error", () => {})
            s.on("close", () => {
              sockets.delete(s)
              client.destroy()
              upstream.destroy()
            })
          }
          forward(client, upstream, true)
          forward(upstream, client, false)
        })
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          resolve({
            port: typeof address === "object" && address !== null ? address.port : 0,
            sent: () => sent,
            close: () => {
              for (const s of sockets) s.destroy()
              server.close()
            }
          })
        })
      })
    ),
    (proxy) => Effect.sync(proxy.close)
  )
