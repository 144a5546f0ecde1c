"""The client door: the admin APIs stock Kafka clients send to client listeners."""
