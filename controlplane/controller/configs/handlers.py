"""The controller's config RPCs: AlterConfigs and IncrementalAlterConfigs.

DescribeConfigs is a read of the projection (configs.describe) and needs no controller.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.controller.configs import control
from controlplane.controller.env import ControllerEnv, Handler
from controlplane.controller.image import MetadataDelta
from controlplane.controller.result import ControllerResult


def _alter_configs(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return control.alter_configs(view, payload)


def _incremental_alter_configs(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return control.incremental_alter_configs(view, payload)


HANDLERS: Mapping[str, Handler] = {
    "AlterConfigs": _alter_configs,
    "IncrementalAlterConfigs": _incremental_alter_configs,
}
