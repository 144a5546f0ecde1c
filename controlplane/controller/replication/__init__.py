"""Topics and partitions (Kafka's ReplicationControlManager): CreateTopics, DeleteTopics and
CreatePartitions (`topics`, placing replicas with `placement`), AlterPartition
(`alter_partition`), AlterReplicaState (`alter_replica_state`, KIP-589), ElectLeaders and the
preferred-leader rebalance (`elections`), and the controller handlers (`handlers`).

It builds on the partition model (`controlplane.controller.partitions`) and checks the sending
broker's epoch with the brokers domain.
"""
