import { Deferred, Effect, Exit, FiberId, type Scope } from "effect"
import * as Net from "node:net"

/**
 * A loopback TCP proxy in front of a server, for cutting connections exactly where a test wants.
 * Each accepted connection gets the plan's fault for its index (0, 1, 2…), in accept order:
 *   midEvent(k)   forward k complete SSE events of the response and half of the next, then reset both sides
 *   afterRequest  forward the request upstream, then reset the client before any response byte
 *   refuse        reset the client at once (nothing reaches the server)
 *   silentAfter(k) forward k complete SSE events, then nothing more, keeping both sockets open (a dead link)
 *   undefined     pass everything through
 */
export type Fault =
  | { readonly _tag: "MidEvent"; readonly events: number }
  | { readonly _tag: "AfterRequest" }
  | { readonly _tag: "Refuse" }
  | { readonly _tag: "SilentAfter"; readonly events: number }

export const Fault = {
  midEvent: (events: number): Fault => ({ _tag: "MidEvent", events }),
  afterRequest: { _tag: "AfterRequest" } as Fault,
  refuse: { _tag: "Refuse" } as Fault,
  silentAfter: (events: number): Fault => ({ _tag: "SilentAfter", events })
}

export interface TcpProxy {
  readonly url: string
  /** The request line (`POST /v1/… HTTP/1.1`) of each connection that sent one, in arrival order. */
  readonly requests: Array<string>
  /** Completes when the n-th cut (1-based) has happened. */
  readonly cut: (n: number) => Effect.Effect<void>
  /** Completes when the n-th connection (1-based) has sent its request line. */
  readonly requested: (n: number) => Effect.Effect<void>
}

/** Deferreds by 1-based number, made on first use from either side. */
const signals = () => {
  const list: Array<Deferred.Deferred<void>> = []
  const at = (n: number) => {
    while (list.length < n) list.push(Deferred.unsafeMake<void>(FiberId.none))
    return list[n - 1]!
  }
  let count = 0
  return { await: (n: number) => Deferred.await(at(n)), fire: () => Deferred.unsafeDone(at(++count), Exit.void) }
}

const eventEnds = (text: string): Array<number> => {
  const ends: Array<number> = []
  for (let i = text.indexOf("\n\n"); i >= 0; i = text.indexOf("\n\n", i + 2)) ends.push(i + 2)
  return ends
}

export const makeTcpProxy = (target: { readonly port: number }, plan: (index: number) => Fault | undefined): Effect.Effect<TcpProxy, never, Scope.Scope> =>
  Effect.gen(function*() {
    const requests: Array<string> = []
    const cuts = signals()
    const lines = signals()
    const markCut = cuts.fire
    const sockets = new Set<Net.Socket>()

    let accepted = 0
    const server = Net.createServer((client) => {
      const fault = plan(accepted++)
      sockets.add(client)
      client.on("close", () => sockets.delete(client))
      client.on("error", () => {})
      if (fault?._tag === "Refuse") {
        client.resetAndDestroy()
        markCut()
        return
      }
      const upstream = Net.connect(target.port, "127.0.0.1")
      sockets.add(upstream)
      upstream.on("close", () => sockets.delete(upstream))
      upstream.on("error", () => client.destroy())
      client.on("close", () => upstream.destroy())
      upstream.on("close", () => client.destroy())
      let head = ""
      let parsed = false
      client.on("data", (data: Buffer) => {
        if (!parsed) {
          head += data.toString("latin1")
          const line = head.indexOf("\r\n")
          if (line >= 0) {
            parsed = true
            requests.push(head.slice(0, line))
            lines.fire()
          }
        }
        upstream.write(data)
      })
      if (fault?._tag === "AfterRequest") {
        // the server has the request (it may admit it); the client never hears back
        upstream.once("data", () => {
          client.resetAndDestroy()
          markCut()
        })
      }
      let seen = ""
      let done = false
      upstream.on("data", (data: Buffer) => {
        if (done) return
        if (fault?._tag === "AfterRequest") return
        if (fault?._tag !== "MidEvent" && fault?._tag !== "SilentAfter") return void client.write(data)
        const before = seen.length
        seen += data.toString("latin1")
        const ends = eventEnds(seen)
        const body = seen.indexOf("\r\n\r\n") + 4
        const complete = ends.filter((end) => end > body)
        const boundary = complete[fault.events - 1]
        if (boundary === undefined || seen.length <= boundary + 1) return void client.write(data)
        if (fault._tag === "SilentAfter") {
          done = true
          client.write(Buffer.from(seen.slice(before, Math.max(before, boundary)), "latin1"))
          return markCut()
        }
        // forward up to the middle of the next event, then reset: the client holds half an event
        const nextEnd = complete[fault.events] ?? seen.length
        const half = boundary + Math.max(1, Math.floor((nextEnd - boundary) / 2))
        done = true
        client.write(Buffer.from(seen.slice(before, Math.max(before, half)), "latin1"), () => {
          client.resetAndDestroy()
          upstream.destroy()
          markCut()
        })
      })
    })
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
      () =>
        Effect.async<void>((resume) => {
          for (const socket of sockets) socket.destroy()
          server.close(() => resume(Effect.void))
        })
    )
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    return { url: `http://127.0.0.1:${port}`, requests, cut: cuts.await, requested: lines.await }
  })
