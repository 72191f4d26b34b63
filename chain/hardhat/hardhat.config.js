// Hardhat needs a config to start its node; zoo-node needs nothing more of it.
export default {};
