"""The report builders, each registered against its catalogue entry with `@builds(name)`: a
function of (export, params) that returns the report's DataFrame. audit.spark.reports imports
every module that holds builders, so that all are registered when it is imported."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame

from audit.spark.catalog import CATALOG, ReportInfo
from audit.spark.params import Params
from audit.spark.reader import Export

Builder = Callable[[Export, Params], DataFrame]

_BUILDERS: dict[str, Builder] = {}


def builds(name: str) -> Callable[[Builder], Builder]:
    """Registers the decorated function as the builder of report `name` (a catalogued report;
    registering the same function again is a no-op, a second function for it an error)."""
    if name not in CATALOG:
        raise LookupError(f"report {name!r} is not in the catalogue (audit.spark.catalog)")

    def register(build: Builder) -> Builder:
        if _BUILDERS.setdefault(name, build) is not build:
            raise ValueError(f"report {name!r} already has a builder: {_BUILDERS[name]!r}")
        return build

    return register


def builder_of(info: ReportInfo) -> Builder:
    try:
        return _BUILDERS[info.name]
    except KeyError:
        raise LookupError(f"report {info.name!r} has no builder (@builds)") from None
