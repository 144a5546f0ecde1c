"""The balancer's request bodies, checked strictly (unknown fields, wrong JSON types and values
out of range answer 400 INVALID_REQUEST naming the field)."""

from __future__ import annotations

from rest_framework import serializers

from controlplane.api.fields import (
    INT32_MAX,
    INT64_MAX,
    StrictBooleanField,
    StrictIntegerField,
    StrictSerializer,
)

GOALS = ("rebalance", "drain", "fill")


class CreateBalancePlanSerializer(StrictSerializer):
    goal = serializers.ChoiceField(choices=GOALS)
    # The broker drained or filled (required for those goals; none for rebalance).
    broker_id = StrictIntegerField(
        min_value=0, max_value=INT32_MAX, required=False, default=None, allow_null=True
    )


class RebalancePlanRequest(StrictSerializer):
    """The schema's view of a rebalance request: no broker named."""

    goal = serializers.ChoiceField(choices=("rebalance",))
    broker_id = StrictIntegerField(
        min_value=0, max_value=INT32_MAX, required=False, default=None, allow_null=True
    )


class BrokerPlanRequest(StrictSerializer):
    """The schema's view of a drain or a fill: the broker is named."""

    goal = serializers.ChoiceField(choices=("drain", "fill"))
    broker_id = StrictIntegerField(min_value=0, max_value=INT32_MAX)


class ExecuteBalancePlanSerializer(StrictSerializer):
    plan_id = StrictIntegerField(min_value=0)  # the path's: an id no plan has answers 404
    # Partitions per AlterPartitionReassignments, and moving at once at most.
    batch_size = StrictIntegerField(
        min_value=1, max_value=10_000, required=False, default=None, allow_null=True
    )
    concurrency = StrictIntegerField(
        min_value=1, max_value=100_000, required=False, default=None, allow_null=True
    )
    # Kafka's replication throttle on the moving replicas (bytes/s per broker); none: unthrottled.
    throttle = StrictIntegerField(
        min_value=1, max_value=INT64_MAX, required=False, default=None, allow_null=True
    )
    # A drain: unregister the broker once it holds nothing and is stopped (UnregisterBroker).
    unregister = StrictBooleanField(required=False, default=False)


class BalancePlanIdSerializer(StrictSerializer):
    plan_id = StrictIntegerField(min_value=0)  # the path's: an id no plan has answers 404
