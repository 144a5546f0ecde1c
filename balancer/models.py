"""The balancer's plans (balancer.planner) and their execution: one row a plan, its moves and
skew before and after, its state and progress. Not a projection of the metadata log: the moves
it executes are (AlterPartitionReassignments), the plan is the operator's work order."""

from __future__ import annotations

from django.db import models


class PlanState(models.TextChoices):
    PROPOSED = "PROPOSED"  # previewed, not executed
    EXECUTING = "EXECUTING"  # its moves are being made, a batch at a time
    CANCELLING = "CANCELLING"  # asked to stop: its moves in progress are being cancelled
    COMPLETED = "COMPLETED"  # every move made (or refused: see its progress)
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"  # stopped by an error, or its worker stopped


# The plan's state machine as data: which states each may move to.
TRANSITIONS: dict[str, frozenset[str]] = {
    PlanState.PROPOSED: frozenset({PlanState.EXECUTING, PlanState.CANCELLED}),
    PlanState.EXECUTING: frozenset({PlanState.CANCELLING, PlanState.COMPLETED, PlanState.FAILED}),
    PlanState.CANCELLING: frozenset({PlanState.CANCELLED, PlanState.FAILED}),
    PlanState.COMPLETED: frozenset(),
    PlanState.CANCELLED: frozenset(),
    PlanState.FAILED: frozenset(),
}
RUNNING_STATES = (PlanState.EXECUTING, PlanState.CANCELLING)


class BalancePlan(models.Model):
    goal = models.CharField(max_length=16)  # rebalance, drain, fill
    broker_id = models.IntegerField(null=True, blank=True)  # the broker drained or filled
    state = models.CharField(max_length=16, choices=PlanState.choices, default=PlanState.PROPOSED)
    # True while EXECUTING or CANCELLING: the unique index lets one plan run at a time.
    running = models.BooleanField(default=False)
    message = models.TextField(blank=True, default="")
    # [{topic, partition, before, after}], by topic and partition.
    moves = models.JSONField(default=list)
    moves_total = models.IntegerField(default=0)
    skew_before = models.JSONField(default=dict)
    skew_after = models.JSONField(default=dict)
    # How it runs: batch_size, concurrency, throttle (bytes/s or null), unregister (drain).
    options = models.JSONField(default=dict)
    # done, in_flight, failed [{partition, error}], skipped [{partition, why}], batches.
    progress = models.JSONField(default=dict)
    requested_by = models.CharField(max_length=255)
    executed_by = models.CharField(max_length=255, blank=True, default="")
    created_ms = models.BigIntegerField()
    started_ms = models.BigIntegerField(null=True, blank=True)
    finished_ms = models.BigIntegerField(null=True, blank=True)
    updated_ms = models.BigIntegerField(null=True, blank=True)  # the executor's last word

    class Meta:
        db_table = "cp_balance_plan"
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["running"],
                condition=models.Q(running=True),
                name="cp_balance_plan_one_running",
            )
        ]

    def __str__(self) -> str:
        return f"plan {self.pk} ({self.goal}, {self.state})"
