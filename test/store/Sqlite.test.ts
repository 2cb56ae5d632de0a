import { Effect, Layer } from "effect"
import * as Path from "node:path"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import { storeContract } from "../support/storeContract.js"
import { tempDir } from "../support/tempDir.js"

storeContract("sqlite", () =>
  Layer.unwrapScoped(Effect.map(tempDir, (dir) => layerSqlite({ filename: Path.join(dir, "baton.db") }))))
