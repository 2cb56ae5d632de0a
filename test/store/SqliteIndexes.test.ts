import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Path from "node:path"
import { openDatabase } from "../../src/services/store/sqlite/Open.js"
import { sqliteQueries } from "../../src/services/store/sqlite/SqliteStore.js"
import { tempDir } from "../support/tempDir.js"

describe("StoreSqlite indexes", () => {
  it.scoped("resume queries are index searches: no scan of items, chunks, runs or open_calls", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const sql = yield* openDatabase({ filename: Path.join(dir, "baton.db") })
      const q = sqliteQueries(sql)
      // [name, statement, the index each table access must go through]
      const cases = [
        ["pending approvals", q.openCallItems("conv-1"), ["PRIMARY KEY", "items_position"]],
        ["backfill", q.renderTail("conv-1", 40), ["items_render"]],
        ["run by otid", q.runByOtid("conv-1", "otid-1"), ["runs_otid"]],
        ["chunks after a seq", q.chunksAfter("run-1", 10, 256), ["chunks_seq"]],
        ["model context", q.contextItems("conv-1", 2), ["items_context"]],
        ["segment export", q.traceBodies("conv-1", 1), ["items_trace"]],
        ["segment items", q.segmentItems("conv-1", 1), ["items_segment"]],
        ["current segment items", q.currentSegmentItems("conv-1"), ["items_segment"]],
        ["items after", q.itemsAfter("conv-1", 5, 100, 50), ["items_position"]],
        ["items before", q.itemsBefore("conv-1", 100, 50), ["items_position"]],
        ["item by id", q.itemById("msg-1"), ["items_id"]],
        ["active run", q.activeRun("conv-1"), ["runs_running"]],
        ["run by otid or active", q.runByOtidOrActive("conv-1", "otid-1"), ["runs_otid", "runs_running"]],
        ["held steering", q.heldSteering("conv-1"), ["steering_conversation"]],
        ["run seqs", q.runSeqs("conv-1", ["run-1", "run-2"]), ["sqlite_autoindex_runs_1"]],
        ["results of calls", q.toolReturns("conv-1", ["call-1", "call-2"]), ["items_tool_return"]],
        ["open calls among", q.openCallIds("conv-1", ["call-1"]), ["PRIMARY KEY"]],
        ["conversation page", q.conversationsPage({ updatedAt: 5, touched: 3 }, 20), ["conversations_recent"]],
        ["top-level page", q.conversationsPage({ updatedAt: 5, touched: 3 }, 20, { roots: true }), ["conversations_recent"]],
        ["a Task call's child", q.childOf("conv-1", "t1"), ["conversations_parent"]]
      ] as const
      for (const [name, statement, indexes] of cases) {
        const [text, params] = statement.compile()
        const plan = yield* sql.unsafe<{ readonly detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params)
        const details = plan.map((row) => row.detail)
        const accesses = details.filter((d) => /^(SCAN|SEARCH) /.test(d))
        assert.isAbove(accesses.length, 0, name)
        for (const access of accesses) {
          assert.match(access, /^SEARCH /, `${name}: ${details.join(" | ")}`)
        }
        for (const index of indexes) {
          assert.isTrue(accesses.some((a) => a.includes(index)), `${name} uses ${index}: ${details.join(" | ")}`)
        }
        // The results of a few calls are a few rows: ordering them needs no index of its own.
        if (name !== "active run" && name !== "run by otid or active" && name !== "results of calls") {
          assert.isFalse(details.some((d) => d.includes("TEMP B-TREE")), `${name} sorts in a temp b-tree: ${details.join(" | ")}`)
        }
      }
    }))
})
