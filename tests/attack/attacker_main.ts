/**
 * A real `zoo-node --join` peer that runs one attack: the command line is
 * zoo-node's, and `<data-dir>/attack.json` ({@linkcode AttackSetup})
 * names the attack. Test-only: the shipped CLI has no way to cheat.
 *
 * @module
 */
import { join } from "../../node/cli/join.ts";
import { parseCommand } from "../../node/cli/parse.ts";
import { loadConfig } from "../../node/config_load.ts";
import { attackBehaviour, ATTACKS, type AttackSetup } from "./behaviours.ts";

/** The file in a peer's data dir that makes it an attacker. */
export const ATTACK_FILE = "attack.json";

if (import.meta.main) {
  const command = parseCommand(Deno.args);
  if (command.kind !== "join") {
    throw new Error(`attacker_main runs --join only, not ${command.kind}`);
  }
  const config = await loadConfig(command.flags, Deno.env.toObject());
  const setup = JSON.parse(
    await Deno.readTextFile(`${config.dataDir}/${ATTACK_FILE}`),
  ) as AttackSetup;
  if (!ATTACKS.includes(setup.name)) {
    throw new Error(`unknown attack ${setup.name}`);
  }
  console.log(`attacker: running ${setup.name}`);
  Deno.exit(await join(config, attackBehaviour(setup)));
}
