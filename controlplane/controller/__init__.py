"""The pure controller core: (state, request) -> (metadata records, response). No Django, no I/O.

Layered, top to bottom (import-linter keeps it so, see pyproject.toml):

- `dispatch`: handlers by API name, `run_event`.
- the domains, one package each, with their rules (`control`), their reads when the API answers
  from the projection (`describe`) and their handlers (`handlers`): `acls`, `configs`, `quotas`,
  `tokens`, `replication` (topics and partitions), then `brokers`.
- `partitions`: the partition model they build on (state machines, PartitionChangeBuilder,
  where leadership goes when brokers leave or return).
- `env`: what a handler runs with (clock, broker sessions, static configs, randomness).
- `config_schema` (the config keys), `image` (the state, one part per domain), `result`.
- `records`, `errors`.
"""
