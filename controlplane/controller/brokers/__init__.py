"""Brokers (Kafka's ClusterControlManager and BrokerHeartbeatManager): registration, the
heartbeat state machine, fencing and unregistration (`control`), and the controller handlers
(`handlers`). A broker's change of state moves partition leadership through
`controlplane.controller.partitions.leadership`.
"""
