"""Kafka's own wire protocol for stock admin clients (`manage.py serve_kafka`): a second front
door on the same RPC registry, authorizer, controller and audit trail as the REST API."""
