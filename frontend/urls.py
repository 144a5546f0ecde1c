from django.urls import URLPattern, path
from django.views.generic import RedirectView

from frontend.views import (
    acls,
    audit,
    auth,
    balance,
    broker_actions,
    canary,
    charts,
    cluster,
    config_target,
    configs,
    mirror,
    quotas,
    scram,
    search,
    timeline,
    tokens,
    topic_actions,
    topic_create,
    topics,
)
from frontend.views.base import HOME_URL

app_name = "frontend"

TOPIC = {"kind": config_target.TOPIC_KIND}
BROKER = {"kind": config_target.BROKER_KIND}
DEFAULT = {"kind": config_target.DEFAULT_KIND}


def client_config_paths(kind: str, segment: str) -> list[URLPattern]:
    """A client metrics subscription's or a group's config pages (opened by name from the
    index), as a topic's."""
    kwargs = {"kind": kind}
    return [
        path(f"ui/configs/{segment}/", configs.config_open_view, kwargs, name=f"{kind}-open"),
        path(
            f"ui/configs/{segment}/<str:name>/",
            configs.config_detail_view,
            kwargs,
            name=f"{kind}-config",
        ),
        path(
            f"ui/configs/{segment}/<str:name>/edit/",
            configs.config_edit_view,
            kwargs,
            name=f"{kind}-config-edit",
        ),
        path(
            f"ui/configs/{segment}/<str:name>/apply/",
            configs.config_apply_view,
            kwargs,
            name=f"{kind}-config-apply",
        ),
    ]


urlpatterns = [
    path("", RedirectView.as_view(url=HOME_URL), name="home"),
    path("ui/", cluster.overview_view, name="overview"),
    path("ui/login/", auth.login_view, name="login"),
    path("ui/logout/", auth.logout_view, name="logout"),
    path("ui/brokers/", cluster.broker_list_view, name="broker-list"),
    path("ui/brokers/<int:broker_id>/", cluster.broker_detail_view, name="broker-detail"),
    path(
        "ui/brokers/<int:broker_id>/unregister/",
        broker_actions.broker_unregister_view,
        name="broker-unregister",
    ),
    path("ui/topics/", topics.topic_list_view, name="topic-list"),
    path("ui/topics/new/", topic_create.topic_create_view, name="topic-create"),
    path("ui/topics/<str:name>/", topics.topic_detail_view, name="topic-detail"),
    path("ui/topics/<str:name>/delete/", topic_actions.topic_delete_view, name="topic-delete"),
    path(
        "ui/topics/<str:name>/partitions/",
        topic_actions.topic_partitions_view,
        name="topic-partitions",
    ),
    path("ui/topics/<str:name>/elect/", topic_actions.topic_elect_view, name="topic-elect"),
    path("ui/partitions/", topics.partition_list_view, name="partition-list"),
    path("ui/timeline/", timeline.timeline_view, name="timeline"),
    path("ui/timeline/<int:offset>/", timeline.timeline_event_view, name="timeline-event"),
    path("ui/incidents/", cluster.incident_list_view, name="incident-list"),
    path("ui/canary/", canary.canary_view, name="canary"),
    path("ui/balance/", balance.balance_view, name="balance"),
    path("ui/balance/plans/", balance.balance_plan_create_view, name="balance-plan-create"),
    path("ui/balance/plans/<int:plan_id>/", balance.balance_plan_view, name="balance-plan"),
    path(
        "ui/balance/plans/<int:plan_id>/execute/",
        balance.balance_plan_execute_view,
        name="balance-plan-execute",
    ),
    path(
        "ui/balance/plans/<int:plan_id>/cancel/",
        balance.balance_plan_cancel_view,
        name="balance-plan-cancel",
    ),
    path("ui/charts/", charts.charts_view, name="charts"),
    path("ui/search/", search.search_view, name="search"),
    # KIP-590's admin APIs: configs, ACLs, client quotas, delegation tokens, the audit trail.
    path("ui/configs/", configs.config_index_view, name="config-index"),
    path(
        "ui/configs/topics/<str:name>/",
        configs.config_detail_view,
        TOPIC,
        name="topic-config",
    ),
    path(
        "ui/configs/topics/<str:name>/edit/",
        configs.config_edit_view,
        TOPIC,
        name="topic-config-edit",
    ),
    path(
        "ui/configs/topics/<str:name>/apply/",
        configs.config_apply_view,
        TOPIC,
        name="topic-config-apply",
    ),
    path(
        "ui/configs/brokers/default/",
        configs.config_detail_view,
        DEFAULT,
        name="default-config",
    ),
    path(
        "ui/configs/brokers/default/edit/",
        configs.config_edit_view,
        DEFAULT,
        name="default-config-edit",
    ),
    path(
        "ui/configs/brokers/default/apply/",
        configs.config_apply_view,
        DEFAULT,
        name="default-config-apply",
    ),
    path(
        "ui/configs/brokers/<int:broker_id>/",
        configs.config_detail_view,
        BROKER,
        name="broker-config",
    ),
    path(
        "ui/configs/brokers/<int:broker_id>/edit/",
        configs.config_edit_view,
        BROKER,
        name="broker-config-edit",
    ),
    path(
        "ui/configs/brokers/<int:broker_id>/apply/",
        configs.config_apply_view,
        BROKER,
        name="broker-config-apply",
    ),
    *client_config_paths(config_target.CLIENT_METRICS_KIND, "client-metrics"),
    *client_config_paths(config_target.GROUP_KIND, "groups"),
    path("ui/acls/", acls.acl_list_view, name="acl-list"),
    path("ui/acls/new/", acls.acl_create_view, name="acl-create"),
    path("ui/acls/new-client/", acls.acl_create_client_view, name="acl-create-client"),
    path("ui/acls/delete/", acls.acl_delete_view, name="acl-delete"),
    path(
        "ui/acls/<str:acl_id>/delete/",
        acls.acl_delete_confirm_view,
        name="acl-delete-confirm",
    ),
    path("ui/quotas/", quotas.quota_list_view, name="quota-list"),
    path("ui/quotas/set/", quotas.quota_set_view, name="quota-set"),
    path("ui/tokens/", tokens.token_list_view, name="token-list"),
    path("ui/tokens/new/", tokens.token_create_view, name="token-create"),
    path("ui/tokens/created/", tokens.token_created_view, name="token-created"),
    path("ui/tokens/renew/", tokens.token_renew_view, name="token-renew"),
    path("ui/tokens/expire/", tokens.token_expire_view, name="token-expire"),
    path("ui/scram-users/", scram.scram_list_view, name="scram-list"),
    path("ui/scram-users/set/", scram.scram_set_view, name="scram-set"),
    path("ui/scram-users/delete/", scram.scram_delete_view, name="scram-delete"),
    path("ui/audit/", audit.audit_list_view, name="audit-list"),
    path("ui/audit/exports/", audit.audit_export_list_view, name="audit-export-list"),
    path("ui/audit/exports/start/", audit.audit_export_start_view, name="audit-export-start"),
    path("ui/audit/reports/", audit.audit_report_list_view, name="audit-report-list"),
    path("ui/audit/reports/<str:name>/", audit.audit_report_view, name="audit-report"),
    # KIP-710's MirrorMaker 2 flows.
    path("ui/mirror/", mirror.flow_list_view, name="mirror-flows"),
    # Before the flow's routes, which two segments would match (a cluster alias is no "config").
    path("ui/mirror/config/", mirror.mirror_config_view, name="mirror-config"),
    path("ui/mirror/config/apply/", mirror.mirror_config_apply_view, name="mirror-config-apply"),
    path("ui/mirror/<str:source>/<str:target>/", mirror.flow_detail_view, name="mirror-flow"),
    path(
        "ui/mirror/<str:source>/<str:target>/<str:action>/",
        mirror.flow_state_view,
        name="mirror-flow-state",
    ),
]
