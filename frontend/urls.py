from django.urls import path
from django.views.generic import RedirectView

from frontend import admin_views, views

app_name = "frontend"

TOPIC = {"kind": admin_views.TOPIC_KIND}
BROKER = {"kind": admin_views.BROKER_KIND}
DEFAULT = {"kind": admin_views.DEFAULT_KIND}

urlpatterns = [
    path("", RedirectView.as_view(url=views.HOME_URL), name="home"),
    path("ui/", views.overview_view, name="overview"),
    path("ui/login/", views.login_view, name="login"),
    path("ui/logout/", views.logout_view, name="logout"),
    path("ui/brokers/", views.broker_list_view, name="broker-list"),
    path("ui/brokers/<int:broker_id>/", views.broker_detail_view, name="broker-detail"),
    path("ui/topics/", views.topic_list_view, name="topic-list"),
    path("ui/topics/<str:name>/", views.topic_detail_view, name="topic-detail"),
    path("ui/incidents/", views.incident_list_view, name="incident-list"),
    # KIP-590's admin APIs: configs, ACLs, client quotas, delegation tokens, the audit trail.
    path("ui/configs/", admin_views.config_index_view, name="config-index"),
    path(
        "ui/configs/topics/<str:name>/",
        admin_views.config_detail_view,
        TOPIC,
        name="topic-config",
    ),
    path(
        "ui/configs/topics/<str:name>/edit/",
        admin_views.config_edit_view,
        TOPIC,
        name="topic-config-edit",
    ),
    path(
        "ui/configs/topics/<str:name>/apply/",
        admin_views.config_apply_view,
        TOPIC,
        name="topic-config-apply",
    ),
    path(
        "ui/configs/brokers/default/",
        admin_views.config_detail_view,
        DEFAULT,
        name="default-config",
    ),
    path(
        "ui/configs/brokers/default/edit/",
        admin_views.config_edit_view,
        DEFAULT,
        name="default-config-edit",
    ),
    path(
        "ui/configs/brokers/default/apply/",
        admin_views.config_apply_view,
        DEFAULT,
        name="default-config-apply",
    ),
    path(
        "ui/configs/brokers/<int:broker_id>/",
        admin_views.config_detail_view,
        BROKER,
        name="broker-config",
    ),
    path(
        "ui/configs/brokers/<int:broker_id>/edit/",
        admin_views.config_edit_view,
        BROKER,
        name="broker-config-edit",
    ),
    path(
        "ui/configs/brokers/<int:broker_id>/apply/",
        admin_views.config_apply_view,
        BROKER,
        name="broker-config-apply",
    ),
    path("ui/acls/", admin_views.acl_list_view, name="acl-list"),
    path("ui/acls/new/", admin_views.acl_create_view, name="acl-create"),
    path("ui/acls/new-client/", admin_views.acl_create_client_view, name="acl-create-client"),
    path("ui/acls/delete/", admin_views.acl_delete_view, name="acl-delete"),
    path(
        "ui/acls/<str:acl_id>/delete/",
        admin_views.acl_delete_confirm_view,
        name="acl-delete-confirm",
    ),
    path("ui/quotas/", admin_views.quota_list_view, name="quota-list"),
    path("ui/quotas/set/", admin_views.quota_set_view, name="quota-set"),
    path("ui/tokens/", admin_views.token_list_view, name="token-list"),
    path("ui/tokens/new/", admin_views.token_create_view, name="token-create"),
    path("ui/tokens/renew/", admin_views.token_renew_view, name="token-renew"),
    path("ui/tokens/expire/", admin_views.token_expire_view, name="token-expire"),
    path("ui/audit/", admin_views.audit_list_view, name="audit-list"),
]
