"""Query parameters of the canary reads, checked strictly."""

from __future__ import annotations

from controlplane.api.fields import StrictCharField, StrictSerializer


class CanaryQuerySerializer(StrictSerializer):
    topic = StrictCharField(max_length=1000, required=False, default=None)


class RolloutQuerySerializer(StrictSerializer):
    version = StrictCharField(max_length=128)
