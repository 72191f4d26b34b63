/**
 * The data pipeline of the compute engine: byte-level tokenizer, Brown
 * corpus conversion, tar reading, deterministic batch sampling and the
 * seedable generator they share. Pure: the I/O (downloads, files) lives in
 * `node/job/corpus.ts`; chunked content-addressed datasets are
 * `protocol/content/dataset.ts`.
 *
 * @module
 */
export * from "./tokenizer.ts";
export * from "./brown.ts";
export * from "./tar.ts";
export * from "./rng.ts";
export * from "./sampler.ts";
