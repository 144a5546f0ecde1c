import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
application = get_wsgi_application()


def _start_embedded_controller() -> None:
    """Embedded, this process is the controller: its timer renews the lease and fences brokers
    whose session lapsed. With a Celery broker configured, controllers run `run_controller`."""
    from controlplane.runtime.executor import executor

    if executor().in_process and os.environ.get("CP_EMBEDDED_CONTROLLER", "1") == "1":
        from controlplane.runtime.controller import get_runtime
        from controlplane.runtime.timer import start_timer_thread

        start_timer_thread(get_runtime())


_start_embedded_controller()
