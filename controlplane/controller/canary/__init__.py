"""Canary isolation (KIP-1095), pure: which partitions are canary (`rules`: the stride rule of
`percent.canary.partition`), which brokers are canary brokers and whether a partition is
isolated on them, the canary-first leader order elections use, and the rollout guard's verdict
(`rollout`).

It sits below the partition model (elections read its leader order) and above the image.
"""
