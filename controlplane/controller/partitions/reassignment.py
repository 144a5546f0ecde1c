"""A partition's replicas while they move (KIP-455), as Kafka's PartitionReassignmentReplicas
and PartitionReassignmentRevert compute them.

A reassignment to a target replica set makes the partition's replicas the target followed by
the replicas leaving (`removing`), with the target's new replicas as `adding`. It completes, in
whichever partition change first finds it so (`completed`), once the ISR less the leaving
replicas holds every target replica: the leaving replicas go, from the replicas and the ISR. A
cancellation (`reverted`) goes back to the replicas the partition had, the ISR less the ones it
was adding.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence


@dataclasses.dataclass(frozen=True, slots=True)
class Assignment:
    """Replicas with the reassignment they are in: `adding` and `removing` both empty when none
    is in progress."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def in_progress(self) -> bool:
        return bool(self.adding or self.removing)


def moving_to(current: Sequence[int], target: Sequence[int]) -> Assignment:
    """The assignment that starts moving replicas `current` to `target`: the target then what
    leaves (in broker id order, as Kafka's TreeSet orders them), the new ones as `adding`.
    `current` is every replica the partition has now, those of a reassignment in progress
    included: a new target replaces it, and what it was adding that the new one drops leaves."""
    # Comprehensions over the few replicas a partition has: cheaper than sets of them.
    leaving = [r for r in current if r not in target]
    joining = [r for r in target if r not in current]
    leaving.sort()
    joining.sort()
    removing, adding = tuple(leaving), tuple(joining)
    return Assignment((*target, *removing), adding, removing)


def completed(
    assignment: Assignment, isr: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(replicas, ISR) once the reassignment is complete with this ISR, or None: not in
    progress, or not yet (Kafka's maybeCompleteReassignment). Never an empty ISR: a
    reassignment whose only in-sync replicas are leaving waits."""
    if not assignment.in_progress:
        return None
    removing = assignment.removing
    new_isr, new_replicas = isr, assignment.replicas
    if removing:
        new_isr = tuple([r for r in isr if r not in removing])
        new_replicas = tuple([r for r in assignment.replicas if r not in removing])
        if not new_isr or not new_replicas:
            return None
    for replica in new_replicas:
        if replica not in new_isr:
            return None
    return new_replicas, new_isr


@dataclasses.dataclass(frozen=True, slots=True)
class Revert:
    """Where a cancelled reassignment goes back to: the original replicas, the ISR less the
    replicas it was adding, and whether that takes an unclean election (every in-sync replica
    was a new one: the first original replica becomes the ISR)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    unclean: bool


def reverted(assignment: Assignment, isr: tuple[int, ...]) -> Revert:
    adding = assignment.adding
    replicas = tuple(r for r in assignment.replicas if r not in adding)
    kept = tuple(r for r in isr if r not in adding)
    if kept or not replicas:
        return Revert(replicas, kept, unclean=False)
    return Revert(replicas, (replicas[0],), unclean=True)
