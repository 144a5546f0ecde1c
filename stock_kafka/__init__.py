"""Stock Apache Kafka under this control plane: its jars from Maven Central (`jars`), a broker's
configuration (`broker_config`) and the launcher of brokers (`broker`). An operator's tool, as
`make run KAFKA_BROKERS=N` and the compose file use it; no Django."""
