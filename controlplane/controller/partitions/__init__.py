"""The partition model the broker and replication rules build on: replica and partition state
machines (`states`), partition changes as records with leader election (`changes`, Kafka's
PartitionChangeBuilder) and where leadership goes when brokers leave or return (`leadership`).
"""
