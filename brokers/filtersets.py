import django_filters

from brokers.models import Broker
from controlplane.filtersets import StrictBooleanFilter


class BrokerFilterSet(django_filters.FilterSet):  # type: ignore[misc]
    pod = django_filters.ChoiceFilter(
        choices=[("broker", "broker"), ("canary-broker", "canary-broker")]
    )
    rack = django_filters.CharFilter()
    fenced = StrictBooleanFilter()

    class Meta:
        model = Broker
        fields = ["pod", "rack", "fenced"]
