from django.apps import AppConfig


class MirrorConfig(AppConfig):
    name = "mirror"
    label = "mirror"
    verbose_name = "MirrorMaker 2 replication flows (KIP-710)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from controlplane.runtime.projections import register_projection
        from controlplane.runtime.timer import register_timer_job
        from mirror.projection import MirrorProjection
        from mirror.timer import mirror_members_expire

        register_projection(MirrorProjection())
        register_timer_job(mirror_members_expire)
