import { onPostgres, pgStore } from "../support/pgDatabase.js"
import { storeContract } from "../support/storeContract.js"

onPostgres("Store contract: postgres", () => storeContract("postgres", () => pgStore))
