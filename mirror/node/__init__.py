"""A dedicated MirrorMaker 2 node (KIP-710): its own process, no Django, reaching control planes
over HTTP only (import-linter keeps it so). `node` follows the configuration and runs one
`herder.FlowWorker` per flow, each with its REST server (`rest`), its connectors and tasks
(`connectors`), its config providers (`providers`) and its clients (`clients`)."""
