"""The internal listener's URL conf: the brokers' API (`/internal/v1/...`) and `/metrics`.

Like Kafka's inter-broker listener, it is served on a port of its own: by a process started with
`CP_LISTENER=internal`, or, in a process that binds both listeners (the embedded run), on
`CP_INTERNAL_PORT` (controlplane.middleware.ListenerMiddleware). The public listener
(shell/urls.py) does not serve these paths.
"""

from django.urls import include, path

from brokers.api import views as broker_views
from replicas.api import views as replica_views
from shell.api import snapshot_views, views
from shell.api.envelope import EnvelopeView

internal = [
    path(
        "broker-registration",
        broker_views.BrokerRegistrationView.as_view(),
        name="broker-registration",
    ),
    path("broker-heartbeat", broker_views.BrokerHeartbeatView.as_view(), name="broker-heartbeat"),
    path("metadata", views.MetadataFetchView.as_view(), name="metadata-fetch"),
    path(
        "metadata/snapshot",
        snapshot_views.MetadataSnapshotView.as_view(),
        name="metadata-snapshot",
    ),
    path(
        "metadata/snapshots/<str:end_offset>",
        snapshot_views.MetadataSnapshotFetchView.as_view(),
        name="metadata-snapshot-fetch",
    ),
    path("envelope", EnvelopeView.as_view(), name="envelope"),
    path("alter-partition", replica_views.AlterPartitionView.as_view(), name="alter-partition"),
    path(
        "alter-replica-state",
        replica_views.AlterReplicaStateView.as_view(),
        name="alter-replica-state",
    ),
]

urlpatterns = [
    path("internal/v1/", include(internal)),
    # Scraped by Prometheus and by the internal service's healthcheck (docker/compose.yaml).
    path("metrics", views.metrics_view, name="metrics"),
]
