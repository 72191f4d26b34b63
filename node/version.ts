/** The zoo-node software version, sent in heartbeats and printed by `--version`. */
export const VERSION = "0.1.0";
