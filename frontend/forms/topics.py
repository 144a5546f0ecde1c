"""The topic action forms: create a topic, add partitions, elect leaders."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from controlplane.controller.config_schema import topic_config_def
from controlplane.controller.errors import ApiError

TOPIC_NAME_MAX = 249  # Kafka's limit; the API says so for anything longer
INT32_MAX = 2**31 - 1
MAX_PARTITIONS = 100_000  # what one request may create (docs/architecture/choices.md)
ELECTION_TYPES = (
    ("PREFERRED", "preferred: each partition's first replica leads again, if in the ISR"),
    ("UNCLEAN", "unclean: a replica outside the ISR may lead (data may be lost)"),
)


def _configs(text: str) -> list[dict[str, str]]:
    """`key=value` lines (blank lines and `#` comments skipped) as CreateTopics' configs."""
    configs: list[dict[str, str]] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        name, equals, value = stripped.partition("=")
        name, value = name.strip(), value.strip()
        if not equals or not name:
            raise forms.ValidationError(f"Line {number}: expected key=value, got {stripped!r}.")
        if name in seen:
            raise forms.ValidationError(f"Line {number}: {name} is given twice.")
        seen.add(name)
        configs.append({"name": name, "value": value})
    return configs


def bad_configs(configs: list[dict[str, str]]) -> list[str]:
    """Every config the controller would refuse, each named (the controller's CreateTopics stops
    at the first): the pure core's own check, key by key."""
    found = []
    for config in configs:
        try:
            topic_config_def(config["name"]).parse(config["value"])
        except ApiError as error:
            found.append(error.message or error.error.name)
    return found


class TopicCreateForm(forms.Form):
    """CreateTopics for one topic. Empty counts take the cluster's defaults (num.partitions,
    default.replication.factor), as Kafka's -1 does; `defaults` are their effective values and
    sources (`name -> (value, source)`), which the fields' help says."""

    name = forms.CharField(
        label="Name",
        max_length=TOPIC_NAME_MAX,
        widget=forms.TextInput(attrs={"placeholder": "orders", "autocomplete": "off"}),
        help_text="letters, digits, '.', '_' and '-', at most 249",
    )
    num_partitions = forms.IntegerField(
        label="Partitions",
        required=False,
        min_value=1,
        max_value=MAX_PARTITIONS,
        help_text="empty: num.partitions",
    )
    replication_factor = forms.IntegerField(
        label="Replication factor",
        required=False,
        min_value=1,
        max_value=2**15 - 1,
        help_text="empty: default.replication.factor",
    )
    configs = forms.CharField(
        label="Configs",
        required=False,
        max_length=20_000,
        widget=forms.Textarea(
            attrs={"rows": 4, "placeholder": "min.insync.replicas=2\nretention.ms=604800000"}
        ),
        help_text="one key=value a line",
    )

    def __init__(
        self,
        data: Mapping[str, Any] | None = None,
        *,
        defaults: Mapping[str, tuple[str, str]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(data, **kwargs)
        for field, key in (
            ("num_partitions", "num.partitions"),
            ("replication_factor", "default.replication.factor"),
        ):
            if defaults and key in defaults:
                value, source = defaults[key]
                self.fields[field].help_text = f"empty: the cluster's {key}, {value} ({source})"
                self.fields[field].widget.attrs["placeholder"] = value

    def clean_configs(self) -> list[dict[str, str]]:
        return _configs(self.cleaned_data["configs"])

    def body(self, *, validate_only: bool) -> dict[str, Any]:
        data = self.cleaned_data
        partitions, factor = data["num_partitions"], data["replication_factor"]
        return {
            "topics": [
                {
                    "name": data["name"],
                    "num_partitions": -1 if partitions is None else partitions,
                    "replication_factor": -1 if factor is None else factor,
                    "assignments": [],
                    "configs": data["configs"],
                }
            ],
            "validate_only": validate_only,
        }


class AddPartitionsForm(forms.Form):
    """CreatePartitions: the topic's new partition count (more than it has)."""

    count = forms.IntegerField(label="New partition count", min_value=1, max_value=INT32_MAX)


class ElectionForm(forms.Form):
    """ElectLeaders for one topic: every partition, or one."""

    election_type = forms.ChoiceField(label="Election", choices=ELECTION_TYPES)
    partition = forms.IntegerField(
        label="Partition",
        required=False,
        min_value=0,
        max_value=INT32_MAX,
        help_text="empty: every partition of the topic",
    )
