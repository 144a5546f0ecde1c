"""Client quotas (Kafka's ClientQuotaControlManager, KIP-546): entities, keys and
AlterClientQuotas as records (`control`), DescribeClientQuotas and the effective quota
(`describe`) and the controller handler (`handlers`).
"""
