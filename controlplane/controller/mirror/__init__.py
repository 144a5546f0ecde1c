"""MirrorMaker 2 replication flows in dedicated mode (KIP-710), the pure part: the configuration
(`config`, `settings`, `properties`, `references`), what a flow replicates (`policy`), task configs
and assignments (`assignment`), and the flows' groups (`group`, `handlers`)."""
