/**
 * The libp2p host of a browser tab: it dials out over WebSockets (and
 * through circuit relays), as a page cannot accept connections. Peers it is
 * connected to reach it for its deltas and training states over the
 * connections it opened: libp2p opens their streams on those. Others (a
 * second tab) reach it through a relay: it listens on `/p2p-circuit`, so
 * it reserves a slot on a connected peer that runs `--relay`, and its
 * heartbeats announce the relayed address.
 *
 * @module
 */
import { noise } from "@chainsafe/libp2p-noise";
import { yamux } from "@chainsafe/libp2p-yamux";
import { bootstrap } from "@libp2p/bootstrap";
import { circuitRelayTransport } from "@libp2p/circuit-relay-v2";
import type { PrivateKey } from "@libp2p/interface";
import { webSockets } from "@libp2p/websockets";
import { createLibp2p } from "libp2p";
import { dialDiscovered, type Host, hostServices } from "../p2p/services.ts";

/** Creates and starts a tab's host, dialling `bootstrap` (`/ws` addresses). */
export async function createBrowserHost(
  privateKey: PrivateKey,
  bootstrapList: string[],
): Promise<Host> {
  const host = await createLibp2p({
    privateKey,
    addresses: { listen: ["/p2p-circuit"] },
    transports: [webSockets(), circuitRelayTransport()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    peerDiscovery: bootstrapList.length > 0
      ? [bootstrap({ list: bootstrapList, timeout: 100 })]
      : [],
    services: hostServices(),
    // libp2p in a browser refuses private addresses by default; a job's
    // peers on a LAN or this machine (a devnet) are where a tab starts.
    connectionGater: { denyDialMultiaddr: () => false },
  });
  dialDiscovered(host as unknown as Host);
  return host as unknown as Host;
}
