"""Features and the quorum (Kafka's FeatureControlManager, and what its Raft client keeps of
the voters): UpdateFeatures finalizes feature levels, UpdateRaftVoter records where a voter's
controller listeners are."""
