import { layerMemory } from "../../src/services/store/Memory.js"
import { storeContract } from "../support/storeContract.js"

storeContract("memory", () => layerMemory)
