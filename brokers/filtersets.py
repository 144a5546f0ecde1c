import django_filters

from brokers.models import Broker


class BrokerFilterSet(django_filters.FilterSet):  # type: ignore[misc]
    pod = django_filters.ChoiceFilter(
        choices=[("broker", "broker"), ("canary-broker", "canary-broker")]
    )
    rack = django_filters.CharFilter()
    fenced = django_filters.BooleanFilter()

    class Meta:
        model = Broker
        fields = ["pod", "rack", "fenced"]
