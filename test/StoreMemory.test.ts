import { layerMemory } from "../src/services/StoreMemory.js"
import { storeContract } from "./support/storeContract.js"

storeContract("memory", () => layerMemory)
