"""The UI's forms, one module per area. Each admin form turns what the operator typed into
the body of a Kafka admin RPC exactly as the public API takes it; Kafka's own rules
(authorization, ranges, entity combinations, principal types) are the API's and come back as
Kafka errors."""
