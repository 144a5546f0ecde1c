import django_filters
from django import forms
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from controlplane.models import MetadataRecord

INT64_MAX = 2**63 - 1
TRUE, FALSE = frozenset({"true", "True", "1"}), frozenset({"false", "False", "0"})


class StrictBooleanField(forms.Field):
    """true or false (or 1, 0); anything else is an error, never a silently ignored filter."""

    widget = forms.TextInput

    def to_python(self, value: object) -> bool | None:
        if value in (None, ""):
            return None
        if value in TRUE:
            return True
        if value in FALSE:
            return False
        raise forms.ValidationError("Enter true or false.", code="invalid")


# The words accepted, as the schema lists them ("": no filter, as a form's "any" sends it).
@extend_schema_field({"type": "string", "enum": [*sorted(TRUE | FALSE), ""]})
class StrictBooleanFilter(django_filters.BooleanFilter):  # type: ignore[misc]
    field_class = StrictBooleanField


@extend_schema_field(OpenApiTypes.INT64)
class IntegerFilter(django_filters.NumberFilter):  # type: ignore[misc]
    """A whole number in the signed 64-bit range, as the schema says (NumberFilter took `0.5`,
    `1e400`, `NaN`)."""

    field_class = forms.IntegerField

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("min_value", -INT64_MAX - 1)
        kwargs.setdefault("max_value", INT64_MAX)
        super().__init__(*args, **kwargs)


class MetadataRecordFilterSet(django_filters.FilterSet):  # type: ignore[misc]
    type = django_filters.CharFilter(field_name="record_type")
    principal = django_filters.CharFilter()
    request_id = django_filters.CharFilter()
    broker_id = IntegerFilter()
    offset_min = IntegerFilter(field_name="offset", lookup_expr="gte")
    offset_max = IntegerFilter(field_name="offset", lookup_expr="lte")

    class Meta:
        model = MetadataRecord
        fields = ["type", "principal", "request_id", "broker_id", "offset_min", "offset_max"]
