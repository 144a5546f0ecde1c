"""The UI's writes. Every form the operator submits runs its admin RPC through
`controlplane.rpc.execute` by `rpc_call`, the one way a page writes: validated, authorized, sent
to the controller and audited exactly as if the operator had called the API. Then the Kafka
errors of its answer."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.http import HttpRequest

from audit import services as audit_services
from audit.models import AuditExport
from controlplane.authz import client_host, refuse_broker_on_public_write, require_cluster
from controlplane.controller.acls.bindings import AclOperation
from controlplane.controller.errors import Errors
from controlplane.rpc import REGISTRY, Caller, execute
from controlplane.rpc import RpcAnswer as RpcAnswer  # the pages read answers through here
from frontend.tables.common import KafkaProblem, error_code_of, error_name

logger = logging.getLogger("controlplane.audit")

UI_CLIENT_ID = "ui"  # the client id the audit trail shows for the UI's requests


def rpc_call(request: HttpRequest, api_name: str, body: dict[str, Any]) -> RpcAnswer:
    """The admin RPC `api_name` (Kafka's name, or one of the house's own RPCs) with `body` as
    the API takes it, run as the logged-in principal from the browser's address, with the
    request's id. So a write view asks only for a login: refusing a principal here would keep
    the refusal out of the audit trail."""
    spec = REGISTRY[api_name]
    caller = Caller(
        request.principal,  # type: ignore[attr-defined]
        host=client_host(request),
        client_id=UI_CLIENT_ID,
        request_id=request.request_id,  # type: ignore[attr-defined]
    )
    return execute(spec, body, caller)


# --- the errors of an answer --------------------------------------------------------------
def _problem(item: Mapping[str, Any], subject: str = "", fallback: int = 0) -> KafkaProblem:
    code = error_code_of(item) or fallback
    return KafkaProblem(
        error_code=code,
        error=error_name(code),
        message=str(item.get("error_message") or ""),
        subject=subject,
    )


def answer_problems(
    answer: RpcAnswer,
    items_key: str | None = None,
    subject_of: Callable[[int, Mapping[str, Any]], str] = lambda index, item: "",
) -> list[KafkaProblem]:
    """The errors of an admin answer: the request's own (any status but 200, or a top-level
    error code), else each item of `answer.data[items_key]` answered with an error code."""
    data = answer.data
    if answer.status != 200 or error_code_of(data):
        return [_problem(data, fallback=int(Errors.UNKNOWN_SERVER_ERROR))]
    if items_key is None:
        return []
    items = data.get(items_key)
    if not isinstance(items, list):
        return []
    return [
        _problem(item, subject_of(index, item))
        for index, item in enumerate(items)
        if isinstance(item, dict) and error_code_of(item)
    ]


def answer_matching_acls(answer: RpcAnswer) -> list[dict[str, Any]]:
    """The ACLs DeleteAcls' (single) filter matched."""
    results = answer.data.get("filter_results")
    if not isinstance(results, list) or not results or not isinstance(results[0], dict):
        return []
    matching = results[0].get("matching_acls")
    return [m for m in matching if isinstance(m, dict)] if isinstance(matching, list) else []


def matching_acl_problems(answer: RpcAnswer) -> list[KafkaProblem]:
    """DeleteAcls answers an error per matched ACL it could not delete."""
    return [_problem(m) for m in answer_matching_acls(answer) if error_code_of(m)]


def refusal_status(answer: RpcAnswer, problems: list[KafkaProblem]) -> int:
    """The UI's status for a write that failed: the API's for a whole-request error, 403 when
    every item was refused by authorization, else 200 (the form comes back with the errors)."""
    if answer.status != 200:
        return answer.status
    if problems and all(problem.is_authorization for problem in problems):
        return 403
    return 200


def malformed(message: str) -> list[KafkaProblem]:
    """A form the UI itself made came back altered: refused as the API refuses a bad body."""
    error = Errors.INVALID_REQUEST
    return [KafkaProblem(error_code=int(error), error=error.name, message=message)]


# --- the audit export (not a Kafka RPC: authorized as the API authorizes it) --------------------
def audit_export_start(request: HttpRequest) -> AuditExport:
    """Start an export of the audit data as the logged-in principal: ALTER on the cluster,
    never a broker principal, exactly as POST /api/v1/audit-exports. Raises ApiError."""
    principal = request.principal  # type: ignore[attr-defined]
    refuse_broker_on_public_write(principal)
    require_cluster(principal, host=client_host(request), operation=AclOperation.ALTER)
    export = audit_services.audit_export_start(requested_by=principal.principal)
    logger.info("audit export %d to %s requested by %s", export.pk, export.path, principal)
    return export
