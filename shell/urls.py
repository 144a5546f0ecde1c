"""The public listener's URL conf: the admin API (`/api/v1/...`), its schema and docs, `/metrics`
and the UI. The brokers' API (`/internal/v1/...`) is the internal listener's alone
(shell/urls_internal.py); here those paths answer 404 with Kafka's error body."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from audit.api import urls as audit_urls
from balancer.api import urls as balancer_urls
from brokers.api import views as broker_views
from canary.api import urls as canary_urls
from configs.api import urls as configs_urls
from frontend import urls as frontend_urls
from mirror.api import urls as mirror_urls
from replicas.api import views as replica_views
from shell.api import views
from shell.api.rpc_views import rpc_urlpatterns

public = [
    path("whoami", views.WhoAmIView.as_view(), name="whoami"),
    path("cluster", views.ClusterView.as_view(), name="cluster"),
    path("brokers", broker_views.BrokerListView.as_view(), name="broker-list"),
    path("brokers/<int:broker_id>", broker_views.BrokerDetailView.as_view(), name="broker-detail"),
    path("features", broker_views.FeaturesView.as_view(), name="features"),
    path("metadata-log", views.MetadataLogView.as_view(), name="metadata-log"),
    path("topics", replica_views.TopicListView.as_view(), name="topic-list"),
    path("topics/<str:name>", replica_views.TopicDetailView.as_view(), name="topic-detail"),
    path("partitions", replica_views.PartitionListView.as_view(), name="partition-list"),
    path(
        "partition-reassignments",
        replica_views.PartitionReassignmentsView.as_view(),
        name="partition-reassignments",
    ),
    path(
        "replica-incidents",
        replica_views.ReplicaIncidentsView.as_view(),
        name="replica-incidents",
    ),
]

urlpatterns = [
    path("api/v1/", include(public)),
    path("api/v1/", include(rpc_urlpatterns())),  # every admin RPC of the registry
    path("api/v1/", include(configs_urls)),
    path("api/v1/", include(audit_urls)),
    path("api/v1/", include(canary_urls)),
    path("api/v1/", include(mirror_urls)),
    path("api/v1/", include(balancer_urls)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's init script as a file: no inline script (CSP).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="docs"),
    path("metrics", views.metrics_view, name="metrics"),
    path("", include(frontend_urls)),
]
