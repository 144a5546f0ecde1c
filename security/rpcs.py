"""ACL, delegation token and SCRAM credential admin RPCs, as Kafka's AclApis,
DelegationTokenManager and ScramControlManager see them.

ACL writes need ALTER on CLUSTER (never from a broker principal) and go to the controller;
DescribeAcls needs DESCRIBE on CLUSTER and reads the projection. Token writes go to the
controller with the requester in the payload; a token for another owner needs CREATE_TOKENS on
that USER. Kafka refuses CreateDelegationToken from a principal authenticated by a delegation
token (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED): a forwarding broker says so in the Envelope. HMACs
are answered by create only and are never logged. SCRAM credentials (KIP-554) need ALTER on
CLUSTER to change (never from a broker principal) and DESCRIBE on CLUSTER to describe, as Kafka's
ControllerApis and KafkaApis authorize them; the salted password each upsertion carries is
turned into the controller's keys here and never goes further.
"""

from __future__ import annotations

from typing import Any

from rest_framework import status

from audit import resources as named
from controlplane.api.responses import INT, NSTR, STR, arr, kafka, obj
from controlplane.controller.acls import control as acls
from controlplane.controller.acls.bindings import AclBindingFilter, AclOperation, ResourceType
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.scram import control as scram
from controlplane.http_errors import error_body
from controlplane.rpc import Caller, Reply, any_principal, cluster, public_write, register
from controlplane.services import controller_call
from security import selectors
from security.api import acl_serializers as acl_s
from security.api import scram_serializers as scram_s
from security.api import token_serializers as token_s

Body = dict[str, Any]
ACL = kafka(
    resource_type=STR,
    resource_name=STR,
    pattern_type=STR,
    principal=STR,
    host=STR,
    operation=STR,
    permission_type=STR,
)
TOKEN_EXPIRY = kafka(expiry_timestamp_ms=INT, throttle_time_ms=INT)
TOKEN_PRINCIPALS: dict[str, Any] = {
    "principal_type": STR,
    "principal_name": STR,
    "token_requester_principal_type": STR,
    "token_requester_principal_name": STR,
}

# --- ACLs ------------------------------------------------------------------------------------


def create_acls(body: Body, caller: Caller) -> Body:
    creations = [acl_s.as_names(c) for c in body["creations"]]
    results: list[Any] = []
    if creations:
        response = controller_call(
            api="CreateAcls", payload={"creations": creations}, context=caller.context
        )
        results = response["results"]
    return {"throttle_time_ms": 0, "results": results}


def delete_acls(body: Body, caller: Caller) -> Body:
    filters = [acl_s.as_names(f) for f in body["filters"]]
    results: list[Any] = []
    if filters:
        response = controller_call(
            api="DeleteAcls", payload={"filters": filters}, context=caller.context
        )
        results = response["filter_results"]
    return {"throttle_time_ms": 0, "filter_results": results}


def describe_acls(body: Body, caller: Caller) -> Body | Reply:
    acl_filter = AclBindingFilter(**body)
    problem = acls.filter_validation_error(acl_filter)
    if problem is not None:
        return Reply(
            status.HTTP_400_BAD_REQUEST,
            {"throttle_time_ms": 0, **error_body(Errors.INVALID_REQUEST, problem), "resources": []},
        )
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "resources": selectors.acls_describe(acl_filter=acl_filter),
    }


# --- delegation tokens -----------------------------------------------------------------------

EMPTY_CREATE: Body = {
    "error_code": 0,
    "error_message": None,
    "principal_type": "",
    "principal_name": "",
    "token_requester_principal_type": "",
    "token_requester_principal_name": "",
    "issue_timestamp_ms": -1,
    "expiry_timestamp_ms": -1,
    "max_timestamp_ms": -1,
    "token_id": "",
    "hmac": None,
}
EMPTY_EXPIRY: Body = {"error_code": 0, "error_message": None, "expiry_timestamp_ms": -1}


def _call(caller: Caller, api: str, payload: Body) -> Body:
    payload["requester"] = caller.name
    return controller_call(api=api, payload=payload, context=caller.context)


def _authorized_owner(caller: Caller, body: Body) -> bool:
    """Kafka: a token for another owner needs CREATE_TOKENS on that USER."""
    owner_type, owner_name = body["owner_principal_type"], body["owner_principal_name"]
    if not owner_name:  # null or empty (Kafka's Java admin client sends ""): the requester
        return True
    if f"{owner_type}:{owner_name}" == caller.name:
        return True
    return caller.allowed(
        AclOperation.CREATE_TOKENS, ResourceType.USER, f"{owner_type}:{owner_name}"
    )


def token_requests_refused(caller: Caller) -> str | None:
    """Why Kafka's `allowTokenRequests` refuses this caller's Create, Renew and Expire
    DelegationToken (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, checked before anything else), or
    None: a principal authenticated with a delegation token, a PLAINTEXT listener (nobody is
    authenticated there), or 1-way SSL as ANONYMOUS."""
    if caller.principal.token_authenticated:
        return "a principal authenticated with a delegation token"
    if caller.security_protocol == "PLAINTEXT":
        return "a PLAINTEXT listener"
    if caller.security_protocol == "SSL" and caller.name == "User:ANONYMOUS":
        return "an SSL listener without client authentication (User:ANONYMOUS)"
    return None


def _not_allowed(empty: Body, action: str, why: str) -> Body:
    return {
        **empty,
        "error_code": int(Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED),
        "error_message": f"Delegation tokens cannot be {action} from {why}.",
    }


def create_delegation_token(body: Body, caller: Caller) -> Body:
    refused = token_requests_refused(caller)
    if refused is not None:
        return _not_allowed(EMPTY_CREATE, "created", refused)
    if not _authorized_owner(caller, body):
        return {
            **EMPTY_CREATE,
            "error_code": int(Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED),
            "error_message": "Not authorized to create tokens for this owner.",
        }
    payload = {
        "owner_principal_type": body["owner_principal_type"],
        "owner_principal_name": body["owner_principal_name"],
        "renewers": [dict(r) for r in body["renewers"]],
        "max_lifetime_ms": body["max_lifetime_ms"],
    }
    return {**EMPTY_CREATE, **_call(caller, "CreateDelegationToken", payload)}


def renew_delegation_token(body: Body, caller: Caller) -> Body:
    refused = token_requests_refused(caller)
    if refused is not None:
        return _not_allowed(EMPTY_EXPIRY, "renewed", refused)
    payload = {"hmac": body["hmac"], "renew_period_ms": body["renew_period_ms"]}
    return {**EMPTY_EXPIRY, **_call(caller, "RenewDelegationToken", payload)}


def expire_delegation_token(body: Body, caller: Caller) -> Body:
    refused = token_requests_refused(caller)
    if refused is not None:
        return _not_allowed(EMPTY_EXPIRY, "expired", refused)
    payload = {"hmac": body["hmac"], "expiry_time_period_ms": body["expiry_time_period_ms"]}
    return {**EMPTY_EXPIRY, **_call(caller, "ExpireDelegationToken", payload)}


def describe_delegation_token(body: Body, caller: Caller) -> Body:
    owners = body["owners"]
    try:
        return selectors.tokens_describe(
            principal=caller.principal,
            host=caller.host,
            owners=None if owners is None else [dict(o) for o in owners],
        )
    except ApiError as error:  # no secret key: tokens are disabled
        return {**error.as_fields(), "tokens": []}


register(
    "CreateAcls",
    request=acl_s.CreateAclsSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=create_acls,
    resources=named.positional("results", "creations", named.acl),
    response=obj("results", throttle_time_ms=INT, results=arr(kafka())),
)
register(
    "DescribeAcls",
    request=acl_s.DescribeAclsSerializer,
    authorize=cluster(AclOperation.DESCRIBE),
    handler=describe_acls,
    resources=named.whole_body(named.acl),
    response=kafka(
        throttle_time_ms=INT,
        resources=arr(
            obj(
                resource_type=STR,
                resource_name=STR,
                pattern_type=STR,
                acls=arr(obj(principal=STR, host=STR, operation=STR, permission_type=STR)),
            )
        ),
    ),
)
register(
    "DeleteAcls",
    request=acl_s.DeleteAclsSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=delete_acls,
    resources=named.positional("filter_results", "filters", named.acl),
    response=obj(
        "filter_results",
        throttle_time_ms=INT,
        filter_results=arr(kafka(matching_acls=arr(ACL))),
    ),
)
register(
    "CreateDelegationToken",
    request=token_s.CreateDelegationTokenSerializer,
    authorize=public_write,
    handler=create_delegation_token,
    resources=named.created_token,
    response=kafka(
        **TOKEN_PRINCIPALS,
        issue_timestamp_ms=INT,
        expiry_timestamp_ms=INT,
        max_timestamp_ms=INT,
        token_id=STR,
        hmac={**NSTR, "format": "byte", "description": "base64; shown once (null on error)"},
        throttle_time_ms=INT,
    ),
)
register(
    "RenewDelegationToken",
    request=token_s.RenewDelegationTokenSerializer,
    authorize=public_write,
    handler=renew_delegation_token,
    resources=named.token_of_hmac,
    response=TOKEN_EXPIRY,
)
register(
    "ExpireDelegationToken",
    request=token_s.ExpireDelegationTokenSerializer,
    authorize=public_write,
    handler=expire_delegation_token,
    resources=named.token_of_hmac,
    response=TOKEN_EXPIRY,
)
register(
    "DescribeDelegationToken",
    request=token_s.DescribeDelegationTokenSerializer,
    authorize=any_principal,
    handler=describe_delegation_token,
    resources=named.token_owners,
    response=kafka(
        throttle_time_ms=INT,
        tokens=arr(
            obj(
                **TOKEN_PRINCIPALS,
                issue_timestamp=INT,
                expiry_timestamp=INT,
                max_timestamp=INT,
                token_id=STR,
                hmac=NSTR,
                renewers=arr(obj(principal_type=STR, principal_name=STR)),
            )
        ),
    ),
)


# --- SCRAM credentials (KIP-554) ---------------------------------------------------------------


def alter_user_scram_credentials(body: Body, caller: Caller) -> Body:
    """To the controller, each upsertion's salted password already turned into the keys the
    controller keeps (`controller_upsertion`): the salted password goes no further than here."""
    deletions = [{"name": d["name"], "mechanism": d["mechanism"]} for d in body["deletions"]]
    upsertions = [scram.controller_upsertion(u) for u in body["upsertions"]]
    if not deletions and not upsertions:
        return {"throttle_time_ms": 0, "results": []}
    response = controller_call(
        api="AlterUserScramCredentials",
        payload={"deletions": deletions, "upsertions": upsertions},
        context=caller.context,
    )
    if "results" not in response:  # a whole-request error from the controller
        raise ApiError(Errors(response["error_code"]), response.get("error_message"))
    return response


def describe_user_scram_credentials(body: Body, caller: Caller) -> Body:
    users = body["users"]
    names = None if users is None else [str(u["name"]) for u in users]
    return selectors.scram_credentials_describe(users=names)


SCRAM_USER_RESULT = obj(
    user=STR,
    error_code=INT,
    error_message=NSTR,
    credential_infos=arr(obj(mechanism=STR, iterations=INT)),
)
register(
    "AlterUserScramCredentials",
    request=scram_s.AlterUserScramCredentialsSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=alter_user_scram_credentials,
    resources=named.scram_users,
    response=obj("results", throttle_time_ms=INT, results=arr(kafka(user=STR))),
)
register(
    "DescribeUserScramCredentials",
    request=scram_s.DescribeUserScramCredentialsSerializer,
    authorize=cluster(AclOperation.DESCRIBE),
    handler=describe_user_scram_credentials,
    resources=named.scram_users,
    response=kafka(throttle_time_ms=INT, results=arr(SCRAM_USER_RESULT)),
)
