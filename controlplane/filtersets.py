import django_filters

from controlplane.models import MetadataRecord


class MetadataRecordFilterSet(django_filters.FilterSet):  # type: ignore[misc]
    type = django_filters.CharFilter(field_name="record_type")
    principal = django_filters.CharFilter()
    request_id = django_filters.CharFilter()
    broker_id = django_filters.NumberFilter()
    offset_min = django_filters.NumberFilter(field_name="offset", lookup_expr="gte")
    offset_max = django_filters.NumberFilter(field_name="offset", lookup_expr="lte")

    class Meta:
        model = MetadataRecord
        fields = ["type", "principal", "request_id", "broker_id", "offset_min", "offset_max"]
