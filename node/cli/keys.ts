import type { Config } from "../config.ts";
import { ensureIdentity, keyPaths, loadIdentity } from "../identity.ts";

/** `zoo-node keys init`: creates the keys unless they exist. */
export async function keysInit(config: Config): Promise<number> {
  const { identity, created } = await ensureIdentity(config.dataDir);
  const { dir } = keyPaths(config.dataDir);
  console.log(
    created
      ? `created keys in ${dir}`
      : `keys already exist in ${dir}; left unchanged`,
  );
  console.log(`peer id  ${identity.peerId}`);
  console.log(`address  ${identity.address}`);
  return 0;
}

/** `zoo-node keys show`: prints the public ids, never the keys. */
export async function keysShow(config: Config): Promise<number> {
  const identity = await loadIdentity(config.dataDir);
  if (!identity) {
    console.error(
      `zoo-node: no keys in ${
        keyPaths(config.dataDir).dir
      }: run "zoo-node keys init"`,
    );
    return 1;
  }
  console.log(`peer id  ${identity.peerId}`);
  console.log(`address  ${identity.address}`);
  return 0;
}
