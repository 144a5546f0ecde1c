"""The public listener's URL conf: the admin API (`/api/v1/...`), its schema and docs, `/metrics`
and the UI. The brokers' API (`/internal/v1/...`) is the internal listener's alone
(controlplane/urls_internal.py); here those paths answer 404 with Kafka's error body."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from brokers.api import views as broker_views
from controlplane.api import views
from controlplane.api.rpc_views import rpc_urlpatterns
from replicas.api import views as replica_views

public = [
    path("whoami", views.WhoAmIView.as_view(), name="whoami"),
    path("cluster", views.ClusterView.as_view(), name="cluster"),
    path("brokers", broker_views.BrokerListView.as_view(), name="broker-list"),
    path("brokers/<int:broker_id>", broker_views.BrokerDetailView.as_view(), name="broker-detail"),
    path("metadata-log", views.MetadataLogView.as_view(), name="metadata-log"),
    path("topics", replica_views.TopicListView.as_view(), name="topic-list"),
    path("topics/<str:name>", replica_views.TopicDetailView.as_view(), name="topic-detail"),
    path("partitions", replica_views.PartitionListView.as_view(), name="partition-list"),
    path(
        "replica-incidents",
        replica_views.ReplicaIncidentsView.as_view(),
        name="replica-incidents",
    ),
]

urlpatterns = [
    path("api/v1/", include(public)),
    path("api/v1/", include(rpc_urlpatterns())),  # every admin RPC of the registry
    path("api/v1/", include("configs.api.urls")),
    path("api/v1/", include("audit.api.urls")),
    path("api/v1/", include("canary.api.urls")),
    path("api/v1/", include("mirror.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's init script as a file: no inline script (CSP).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="docs"),
    path("metrics", views.metrics_view, name="metrics"),
    path("", include("frontend.urls")),
]
