"""The REST front door of the RPC registry: one thin view class per registered admin RPC.

Each `POST /api/v1/<path>` authenticates (401 when nobody is named: not audited), reads the body
and calls `controlplane.rpc.execute`, which authorizes, validates, runs, answers and audits.
"""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, path
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.api.context import principal_of
from controlplane.api.permissions import IsPrincipal
from controlplane.api.responses import ok
from controlplane.authz import client_host
from controlplane.rpc import REGISTRY, ApiSpec, Caller, RpcAnswer, error_answer, execute


class RpcView(APIView):
    permission_classes = [IsPrincipal]
    spec: ApiSpec

    def post(self, request: Request) -> Response:
        caller = Caller(
            principal_of(request),
            host=client_host(request),
            client_id=request.headers.get("X-Client-ID", ""),
            request_id=getattr(request._request, "request_id", ""),
        )
        body: Any = None
        refusal: RpcAnswer | None = None
        try:
            body = request.data
        except APIException as error:  # unreadable: answered after authorization, as before
            refusal = error_answer(error)
        answer = execute(self.spec, body, caller, refusal=refusal)
        response = Response(answer.data, status=answer.status)
        for header, value in answer.headers.items():
            response[header] = value
        return response


def rpc_view(spec: ApiSpec) -> type[RpcView]:
    def post(self: RpcView, request: Request) -> Response:
        return RpcView.post(self, request)

    documented = extend_schema(request=spec.request, responses=ok(spec.response))(post)
    return type(f"{spec.name}View", (RpcView,), {"spec": spec, "post": documented})


def rpc_urlpatterns() -> list[URLPattern]:
    """Every registered admin RPC with a path at /api/v1/<path> (URL name: the path); those
    without one are run by their app's views."""
    return [
        path(s.path, rpc_view(s).as_view(), name=s.path)
        for s in REGISTRY.values()
        if s.path is not None
    ]
