"""The controller door: what stock Kafka brokers send to controller listeners (the Raft
endpoint, the broker lifecycle, DescribeQuorum, Envelope), behind `gate`."""
