"""The API's shared plumbing: the caller of a request, answers and their schemas, fields, parsers,
serializers, permissions, authorization, pagination and throttles. The views that route to the
apps stand above them, in `shell.api`."""
