/**
 * The data pipeline of the compute engine: byte-level tokenizer, Brown
 * corpus conversion, tar reading, chunked content-addressed datasets,
 * deterministic batch sampling and the seedable generator they share.
 * Pure: the I/O (downloads, files) lives in `node/job/corpus.ts`.
 *
 * @module
 */
export * from "./tokenizer.ts";
export * from "./brown.ts";
export * from "./tar.ts";
export * from "./rng.ts";
export * from "./dataset.ts";
export * from "./sampler.ts";
