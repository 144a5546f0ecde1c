"""The wire APIs: one module per family, each registering its handlers with `@wire_api`."""

from __future__ import annotations

import importlib
import pkgutil


def load_all() -> None:
    """Import every handler module of this package (idempotent): WIRE_APIS is then complete."""
    for module in pkgutil.iter_modules(__path__):
        if module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")
