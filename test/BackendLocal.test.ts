import { Layer } from "effect"
import { layerLocal } from "../src/services/BackendLocal.js"
import { layerScripted } from "../src/services/ProviderScripted.js"
import { layerMemory } from "../src/services/StoreMemory.js"
import { backendContract } from "./support/backendContract.js"

backendContract("local over StoreMemory", (script) =>
  layerLocal().pipe(Layer.provideMerge(layerScripted(script)), Layer.provide(layerMemory)))
