"""The front doors: the RPC routes (one per spec), the Envelope, the schema and the shared views."""
