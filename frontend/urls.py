from django.urls import path
from django.views.generic import RedirectView

from frontend import views

app_name = "frontend"

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
]
