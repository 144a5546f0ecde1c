"""The control plane's Django project.

The Celery app is created when Django's apps are ready (`ControlPlaneConfig.ready`), not on
`import controlplane`: importing the pure controller core (`controlplane.controller`) must not
load Django and Celery, so that Django-free programs (the broker simulator) can use it.
`celery -A controlplane` finds the app in `controlplane.celery` as before.
"""

from typing import Any

__all__ = ["celery_app"]


def __getattr__(name: str) -> Any:
    # `controlplane.celery_app`, for whoever reached it here: created on first use.
    if name == "celery_app":
        from controlplane.celery import app

        return app
    raise AttributeError(f"module 'controlplane' has no attribute {name!r}")
