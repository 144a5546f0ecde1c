from django.apps import AppConfig


class MirrorConfig(AppConfig):
    name = "mirror"
    label = "mirror"
    verbose_name = "MirrorMaker 2 replication flows (KIP-710)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from controlplane.runtime.controller import TIMER_JOBS
        from mirror import projection  # noqa: F401  (registers its projection)
        from mirror.timer import mirror_members_expire

        if mirror_members_expire not in TIMER_JOBS:
            TIMER_JOBS.append(mirror_members_expire)
