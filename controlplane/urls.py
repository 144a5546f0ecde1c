from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from brokers.api import views as broker_views
from controlplane.api import views

internal = [
    path(
        "broker-registration",
        broker_views.BrokerRegistrationView.as_view(),
        name="broker-registration",
    ),
    path("broker-heartbeat", broker_views.BrokerHeartbeatView.as_view(), name="broker-heartbeat"),
    path("metadata", views.MetadataFetchView.as_view(), name="metadata-fetch"),
]

public = [
    path("whoami", views.WhoAmIView.as_view(), name="whoami"),
    path("cluster", views.ClusterView.as_view(), name="cluster"),
    path("brokers", broker_views.BrokerListView.as_view(), name="broker-list"),
    path("brokers/<int:broker_id>", broker_views.BrokerDetailView.as_view(), name="broker-detail"),
    path("metadata-log", views.MetadataLogView.as_view(), name="metadata-log"),
    path(
        "unregister-broker", broker_views.UnregisterBrokerView.as_view(), name="unregister-broker"
    ),
]

urlpatterns = [
    path("internal/v1/", include(internal)),
    path("api/v1/", include(public)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("metrics", views.metrics_view, name="metrics"),
    path("", include("frontend.urls")),
]
