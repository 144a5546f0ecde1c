from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request


class Pagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 1000

    def get_page_size(self, request: Request) -> Any:
        """`?page_size=` is a whole number from 1 to 1000, or a 400 (it was silently ignored)."""
        given = request.query_params.get(self.page_size_query_param)
        if given is None:
            return self.page_size
        if not (given.isascii() and given.isdigit()) or not 1 <= int(given) <= self.max_page_size:
            raise ValidationError(
                {"page_size": [f"A whole number from 1 to {self.max_page_size} is required."]}
            )
        return int(given)

    def get_page_number(self, request: Request, paginator: Any) -> Any:
        """`?page=` is a whole number from 1 (the schema's), or a 400; an empty one was taken
        for page 1 (found by schemathesis)."""
        given = request.query_params.get(self.page_query_param)
        if given is not None and not (given.isascii() and given.isdigit() and int(given) >= 1):
            raise ValidationError({"page": ["A whole number from 1 is required."]})
        return super().get_page_number(request, paginator)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters: list[dict[str, Any]] = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            schema = parameter.setdefault("schema", {})
            schema.update({"type": "integer", "minimum": 1})
            if parameter["name"] == self.page_size_query_param:
                schema["maximum"] = self.max_page_size
        return parameters
