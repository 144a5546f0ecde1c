"""A config key's definition (Kafka's ConfigDef.ConfigKey): its type, default, range, choices and
documentation, and how a value is parsed and checked.

Values travel and are stored as strings, as in Kafka; `ConfigDef.parse` checks one and answers
Kafka's INVALID_CONFIG with Kafka's ConfigException wording. The keys themselves are the config
schema's (`config_schema`: topics and brokers; `client_configs`: client metrics subscriptions
and groups).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from typing import Any

from controlplane.controller.errors import ApiError, Errors


class ConfigType(enum.StrEnum):
    BOOLEAN = "BOOLEAN"
    INT = "INT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    STRING = "STRING"
    LIST = "LIST"
    PASSWORD = "PASSWORD"


INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: str | None
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: frozenset[str] | None = None
    read_only: bool = False
    synonym: str | None = None  # a topic key's broker-level fallback
    per_broker: bool = False  # set on BROKER "<id>" only, never as the cluster default
    # A rule beyond type, range and choices (Kafka's validator): why the parsed value is
    # refused, or None.
    validator: Callable[[Any], str | None] | None = None

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD

    @property
    def is_list(self) -> bool:
        return self.type is ConfigType.LIST

    def parse(self, value: str) -> Any:
        """The typed value of `value`; INVALID_CONFIG when it does not fit the definition."""
        parser = _PARSERS[self.type]
        try:
            parsed = parser(value)
        except ValueError:
            raise self._invalid(value, f"Not a number of type {self.type.value}") from None
        if self.type is ConfigType.BOOLEAN and parsed is None:
            raise self._invalid(value, "Expected value to be either true or false")
        self._check_range(value, parsed)
        self._check_choices(value, parsed)
        if self.validator is not None:
            why = self.validator(parsed)
            if why is not None:
                raise self._invalid(value, why)
        return parsed

    def _check_range(self, value: str, parsed: Any) -> None:
        if self.type in (ConfigType.INT, ConfigType.LONG):
            low, high = INT_RANGE if self.type is ConfigType.INT else LONG_RANGE
            if not low <= parsed <= high:
                raise self._invalid(value, f"Not a number of type {self.type.value}")
        if self.minimum is not None and parsed < self.minimum:
            raise self._invalid(value, f"Value must be at least {_number(self.minimum)}")
        if self.maximum is not None and parsed > self.maximum:
            raise self._invalid(value, f"Value must be no more than {_number(self.maximum)}")

    def _check_choices(self, value: str, parsed: Any) -> None:
        if self.choices is None:
            return
        items = parsed if isinstance(parsed, list) else [parsed]
        for item in items:
            if item not in self.choices:
                kind = "List" if self.is_list else "String"
                raise self._invalid(
                    value, f"{kind} must be one of: {', '.join(sorted(self.choices))}"
                )

    def _invalid(self, value: str, why: str) -> ApiError:
        shown = "[hidden]" if self.sensitive else value
        return ApiError(
            Errors.INVALID_CONFIG, f"Invalid value {shown} for configuration {self.name}: {why}"
        )


def _boolean(value: str) -> bool | None:
    lowered = value.strip().lower()
    return {"true": True, "false": False}.get(lowered)


def _integer(value: str) -> int:
    return int(value.strip())


def _double(value: str) -> float:
    parsed = float(value.strip())
    if parsed != parsed or parsed in (float("inf"), float("-inf")):
        raise ValueError(value)
    return parsed


def _list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


_PARSERS: Mapping[ConfigType, Callable[[str], Any]] = {
    ConfigType.BOOLEAN: _boolean,
    ConfigType.INT: _integer,
    ConfigType.LONG: _integer,
    ConfigType.DOUBLE: _double,
    ConfigType.STRING: str,
    ConfigType.LIST: _list,
    ConfigType.PASSWORD: str,
}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
