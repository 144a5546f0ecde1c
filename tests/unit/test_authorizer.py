"""Kafka ACL filters and StandardAuthorizer decisions.

The example cases are rebuilt from Kafka's StandardAuthorizerTest, AclBindingTest and
ResourcePatternFilterTest; the property tests check the ACL index against a linear scan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.acls.authorizer import (
    AclIndex,
    Action,
    AuthorizationResult,
    RequestContext,
    authorize,
)
from controlplane.controller.acls.bindings import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    parse_principal,
)

Op = AclOperation
Perm = AclPermissionType
RT = ResourceType
PT = PatternType

TOPIC = RT.TOPIC
GROUP = RT.GROUP
LITERAL = PT.LITERAL
PREFIXED = PT.PREFIXED
ALLOW = Perm.ALLOW
DENY = Perm.DENY
ALLOWED = AuthorizationResult.ALLOWED
DENIED = AuthorizationResult.DENIED

LOCALHOST = "127.0.0.1"
SUPER_USERS = frozenset({"User:superman"})


def acl(
    resource_type: ResourceType,
    name: str,
    pattern_type: PatternType,
    principal: str,
    host: str,
    operation: AclOperation,
    permission: AclPermissionType,
) -> AclBinding:
    return AclBinding(resource_type, name, pattern_type, principal, host, operation, permission)


def foo_acl(op: AclOperation, permission: AclPermissionType) -> AclBinding:
    """Kafka's newFooAcl: bob, on topics prefixed "foo_"."""
    return acl(TOPIC, "foo_", PREFIXED, "User:bob", WILDCARD_HOST, op, permission)


def bar_acl(op: AclOperation, permission: AclPermissionType) -> AclBinding:
    """Kafka's newBarAcl: everyone, on the group "bar"."""
    return acl(GROUP, "bar", LITERAL, WILDCARD_PRINCIPAL, WILDCARD_HOST, op, permission)


def decide(
    bindings: Iterable[AclBinding],
    user: str,
    operation: AclOperation,
    resource_type: ResourceType,
    resource_name: str,
    *,
    host: str = LOCALHOST,
    allow_everyone: bool = False,
    super_users: frozenset[str] = SUPER_USERS,
) -> AuthorizationResult:
    return authorize(
        acls=AclIndex.build(bindings),
        context=RequestContext(principal=f"User:{user}", host=host),
        action=Action(operation, resource_type, resource_name),
        super_users=super_users,
        allow_everyone_if_no_acl_found=allow_everyone,
    )


def decide_all(
    bindings: list[AclBinding],
    user: str,
    actions: list[tuple[AclOperation, ResourceType, str]],
    *,
    host: str = LOCALHOST,
) -> list[AuthorizationResult]:
    return [decide(bindings, user, op, rt, name, host=host) for op, rt, name in actions]


# --- StandardAuthorizerTest -------------------------------------------------------------------


@pytest.mark.parametrize("op", [Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER])
def test_allow_implies_describe(op: AclOperation) -> None:
    assert decide([foo_acl(op, ALLOW)], "bob", Op.DESCRIBE, TOPIC, "foo_bar") is ALLOWED


@pytest.mark.parametrize(
    "op", [Op.CREATE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.CLUSTER_ACTION]
)
def test_other_allows_do_not_imply_describe(op: AclOperation) -> None:
    assert decide([foo_acl(op, ALLOW)], "bob", Op.DESCRIBE, TOPIC, "foo_bar") is DENIED


@pytest.mark.parametrize("op", [Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS])
def test_allow_implies_describe_configs(op: AclOperation) -> None:
    assert decide([foo_acl(op, ALLOW)], "bob", Op.DESCRIBE_CONFIGS, TOPIC, "foo_bar") is ALLOWED


@pytest.mark.parametrize("op", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.ALTER_CONFIGS])
def test_implication_does_not_run_backwards(op: AclOperation) -> None:
    # DESCRIBE does not imply READ etc., nor DESCRIBE_CONFIGS ALTER_CONFIGS.
    bindings = [foo_acl(Op.DESCRIBE, ALLOW), foo_acl(Op.DESCRIBE_CONFIGS, ALLOW)]
    assert decide(bindings, "bob", op, TOPIC, "foo_bar") is DENIED


@pytest.mark.parametrize("op", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER])
def test_deny_does_not_imply_describe(op: AclOperation) -> None:
    # A DENY of READ does not deny DESCRIBE, so an ALLOW of DESCRIBE still stands.
    bindings = [foo_acl(op, DENY), foo_acl(Op.DESCRIBE, ALLOW)]
    assert decide(bindings, "bob", Op.DESCRIBE, TOPIC, "foo_bar") is ALLOWED
    assert decide(bindings, "bob", op, TOPIC, "foo_bar") is DENIED


def test_deny_does_not_imply_describe_configs() -> None:
    bindings = [foo_acl(Op.ALTER_CONFIGS, DENY), foo_acl(Op.DESCRIBE_CONFIGS, ALLOW)]
    assert decide(bindings, "bob", Op.DESCRIBE_CONFIGS, TOPIC, "foo_bar") is ALLOWED
    assert decide(bindings, "bob", Op.ALTER_CONFIGS, TOPIC, "foo_bar") is DENIED


@pytest.mark.parametrize(
    ("deny_op", "action_op"),
    [(Op.DESCRIBE, Op.DESCRIBE), (Op.ALTER_CONFIGS, Op.ALTER_CONFIGS), (Op.ALL, Op.DESCRIBE)],
)
def test_exact_deny_beats_allow(deny_op: AclOperation, action_op: AclOperation) -> None:
    bindings = [foo_acl(deny_op, DENY), foo_acl(Op.ALL, ALLOW)]
    assert decide(bindings, "bob", action_op, TOPIC, "foo_bar") is DENIED


def test_principal_matching() -> None:
    assert decide([foo_acl(Op.READ, ALLOW)], "bob", Op.READ, TOPIC, "foo_bar") is ALLOWED
    # Principal does not match (and case matters).
    assert decide([foo_acl(Op.READ, ALLOW)], "alice", Op.READ, TOPIC, "foo_bar") is DENIED
    assert decide([foo_acl(Op.READ, ALLOW)], "Bob", Op.READ, TOPIC, "foo_bar") is DENIED
    # The wildcard principal matches anybody.
    assert decide([bar_acl(Op.READ, ALLOW)], "alice", Op.READ, GROUP, "bar") is ALLOWED
    assert decide(
        [bar_acl(Op.READ, DENY), bar_acl(Op.ALL, ALLOW)], "alice", Op.READ, GROUP, "bar"
    ) is (DENIED)


def test_wildcard_principal_matches_other_principal_types() -> None:
    index = AclIndex.build([bar_acl(Op.READ, ALLOW)])
    result = authorize(
        acls=index,
        context=RequestContext(principal="Group:ops", host=LOCALHOST),
        action=Action(Op.READ, GROUP, "bar"),
        super_users=frozenset(),
        allow_everyone_if_no_acl_found=False,
    )
    assert result is ALLOWED


def test_list_acls() -> None:
    foo = [foo_acl(Op.READ, ALLOW), foo_acl(Op.WRITE, ALLOW)]
    bar = [bar_acl(Op.DESCRIBE_CONFIGS, DENY), bar_acl(Op.ALTER_CONFIGS, DENY)]
    index = AclIndex.build([*foo, *bar])
    assert index.select(AclBindingFilter()) == [*foo, *bar]
    index = index.without([foo[1]])
    assert index.select(AclBindingFilter()) == [foo[0], *bar]
    topics = AclBindingFilter(resource_type=TOPIC, pattern_type=PT.ANY)
    assert index.select(topics) == [foo[0]]


def test_simple_authorizations() -> None:
    bindings = [
        foo_acl(Op.READ, ALLOW),
        foo_acl(Op.WRITE, ALLOW),
        bar_acl(Op.DESCRIBE_CONFIGS, ALLOW),
        bar_acl(Op.ALTER_CONFIGS, ALLOW),
    ]
    assert decide(bindings, "bob", Op.READ, TOPIC, "foo_") is ALLOWED
    assert decide(bindings, "fred", Op.ALTER_CONFIGS, GROUP, "bar") is ALLOWED


def test_deny_precedence_with_operation_all() -> None:
    bindings = [
        acl(TOPIC, "foo", LITERAL, "User:alice", "*", Op.ALL, DENY),
        acl(TOPIC, "foo", PREFIXED, "User:alice", "*", Op.READ, ALLOW),
        acl(TOPIC, "foo", LITERAL, "User:*", "*", Op.ALL, DENY),
        acl(TOPIC, "foo", PREFIXED, "User:*", "*", Op.DESCRIBE, ALLOW),
    ]
    alice = [
        (Op.WRITE, TOPIC, "foo"),
        (Op.READ, TOPIC, "foo"),
        (Op.DESCRIBE, TOPIC, "foo"),
        (Op.READ, TOPIC, "foobar"),
    ]
    assert decide_all(bindings, "alice", alice) == [DENIED, DENIED, DENIED, ALLOWED]
    bob = [
        (Op.DESCRIBE, TOPIC, "foo"),
        (Op.READ, TOPIC, "foo"),
        (Op.WRITE, TOPIC, "foo"),
        (Op.DESCRIBE, TOPIC, "foobaz"),
        (Op.READ, TOPIC, "foobaz"),
    ]
    assert decide_all(bindings, "bob", bob) == [DENIED, DENIED, DENIED, ALLOWED, DENIED]


def test_topic_acl_with_operation_all() -> None:
    bindings = [
        acl(TOPIC, "foo", LITERAL, "User:*", "*", Op.ALL, ALLOW),
        acl(TOPIC, "bar", PREFIXED, "User:alice", "*", Op.ALL, ALLOW),
        acl(TOPIC, "baz", LITERAL, "User:bob", "*", Op.ALL, ALLOW),
    ]
    assert decide_all(
        bindings,
        "alice",
        [
            (Op.WRITE, TOPIC, "foo"),
            (Op.DESCRIBE_CONFIGS, TOPIC, "bar"),
            (Op.DESCRIBE, TOPIC, "baz"),
        ],
    ) == [ALLOWED, ALLOWED, DENIED]
    assert decide_all(
        bindings,
        "bob",
        [(Op.WRITE, TOPIC, "foo"), (Op.READ, TOPIC, "bar"), (Op.DESCRIBE, TOPIC, "baz")],
    ) == [ALLOWED, DENIED, ALLOWED]
    assert decide_all(
        bindings,
        "malory",
        [(Op.DESCRIBE, TOPIC, "foo"), (Op.WRITE, TOPIC, "bar"), (Op.READ, TOPIC, "baz")],
    ) == [ALLOWED, DENIED, DENIED]


def test_host_address_acl_validation() -> None:
    host1, host2 = "192.168.1.1", "192.168.1.2"
    bindings = [
        acl(TOPIC, "foo", LITERAL, "User:alice", host1, Op.READ, DENY),
        acl(TOPIC, "foo", LITERAL, "User:alice", "*", Op.READ, ALLOW),
        acl(TOPIC, "bar", LITERAL, "User:bob", host2, Op.READ, ALLOW),
        acl(TOPIC, "bar", LITERAL, "User:*", LOCALHOST, Op.DESCRIBE, ALLOW),
    ]
    actions = [(Op.READ, TOPIC, "foo"), (Op.READ, TOPIC, "bar"), (Op.DESCRIBE, TOPIC, "bar")]
    expected = {
        ("alice", LOCALHOST): [ALLOWED, DENIED, ALLOWED],
        ("alice", host1): [DENIED, DENIED, DENIED],
        ("alice", host2): [ALLOWED, DENIED, DENIED],
        ("bob", LOCALHOST): [DENIED, DENIED, ALLOWED],
        ("bob", host1): [DENIED, DENIED, DENIED],
        ("bob", host2): [DENIED, ALLOWED, ALLOWED],
    }
    for (user, host), results in expected.items():
        assert decide_all(bindings, user, actions, host=host) == results, (user, host)


MANY_ACLS = [
    acl(TOPIC, "green2", LITERAL, "User:*", "*", Op.READ, ALLOW),
    acl(TOPIC, "green", PREFIXED, "User:bob", "*", Op.READ, ALLOW),
    acl(TOPIC, "betamax4", LITERAL, "User:bob", "*", Op.READ, ALLOW),
    acl(TOPIC, "betamax", LITERAL, "User:bob", "*", Op.READ, ALLOW),
    acl(TOPIC, "beta", PREFIXED, "User:*", "*", Op.READ, ALLOW),
    acl(TOPIC, "alpha", PREFIXED, "User:*", "*", Op.READ, ALLOW),
    acl(TOPIC, "alp", PREFIXED, "User:bob", "*", Op.READ, DENY),
    acl(GROUP, "*", LITERAL, "User:bob", "*", Op.WRITE, ALLOW),
    acl(GROUP, "wheel", LITERAL, "User:*", "*", Op.WRITE, DENY),
]


def test_authorization_with_many_acls() -> None:
    actions = [
        (Op.READ, TOPIC, "green1"),
        (Op.WRITE, GROUP, "wheel"),
        (Op.READ, TOPIC, "alpha"),
        (Op.WRITE, GROUP, "arbitrary"),
        (Op.READ, TOPIC, "ala"),
    ]
    assert decide_all(MANY_ACLS, "bob", actions) == [ALLOWED, DENIED, DENIED, ALLOWED, DENIED]
    # alice: "alpha" is allowed to everyone; the group wildcard is bob's only.
    assert decide_all(MANY_ACLS, "alice", actions) == [DENIED, DENIED, ALLOWED, DENIED, DENIED]


def test_prefix_acls() -> None:
    bindings = [
        acl(TOPIC, "fooa", PREFIXED, "User:alice", "*", Op.ALL, ALLOW),
        acl(TOPIC, "foobar", LITERAL, "User:bob", "*", Op.ALL, ALLOW),
        acl(TOPIC, "f", PREFIXED, "User:bob", "*", Op.ALL, ALLOW),
    ]
    assert decide_all(
        bindings,
        "bob",
        [(Op.WRITE, TOPIC, "foobarr"), (Op.READ, TOPIC, "goobar"), (Op.READ, TOPIC, "fooa")],
    ) == [ALLOWED, DENIED, ALLOWED]
    assert decide_all(
        bindings,
        "alice",
        [(Op.DESCRIBE, TOPIC, "fooa"), (Op.WRITE, TOPIC, "bar"), (Op.READ, TOPIC, "baz")],
    ) == [ALLOWED, DENIED, DENIED]


def test_literal_acl_does_not_match_longer_or_shorter_names() -> None:
    bindings = [acl(TOPIC, "foo", LITERAL, "User:bob", "*", Op.READ, ALLOW)]
    assert decide(bindings, "bob", Op.READ, TOPIC, "foo") is ALLOWED
    assert decide(bindings, "bob", Op.READ, TOPIC, "foobar", allow_everyone=True) is ALLOWED
    assert decide(bindings, "bob", Op.READ, TOPIC, "foobar") is DENIED
    assert decide(bindings, "bob", Op.READ, TOPIC, "fo") is DENIED


def test_prefixed_acl_matches_its_own_name_and_longer_names_only() -> None:
    bindings = [acl(TOPIC, "foo", PREFIXED, "User:bob", "*", Op.READ, ALLOW)]
    assert decide(bindings, "bob", Op.READ, TOPIC, "foo") is ALLOWED
    assert decide(bindings, "bob", Op.READ, TOPIC, "foo.bar") is ALLOWED
    assert decide(bindings, "bob", Op.READ, TOPIC, "fo") is DENIED
    assert decide(bindings, "bob", Op.READ, TOPIC, "xfoo") is DENIED


def test_wildcard_resource() -> None:
    bindings = [acl(TOPIC, WILDCARD_RESOURCE, LITERAL, "User:bob", "*", Op.READ, ALLOW)]
    assert decide(bindings, "bob", Op.READ, TOPIC, "anything") is ALLOWED
    assert decide(bindings, "bob", Op.READ, TOPIC, WILDCARD_RESOURCE) is ALLOWED
    # ... of its resource type only.
    assert decide(bindings, "bob", Op.READ, GROUP, "anything") is DENIED
    # A wildcard DENY overrides a specific ALLOW.
    bindings.append(acl(TOPIC, "*", LITERAL, "User:*", "*", Op.WRITE, DENY))
    bindings.append(acl(TOPIC, "t", LITERAL, "User:bob", "*", Op.WRITE, ALLOW))
    assert decide(bindings, "bob", Op.WRITE, TOPIC, "t") is DENIED
    # A PREFIXED "*" is no wildcard: it matches names starting with "*".
    prefixed_star = [acl(TOPIC, "*", PREFIXED, "User:bob", "*", Op.READ, ALLOW)]
    assert decide(prefixed_star, "bob", Op.READ, TOPIC, "*x") is ALLOWED
    assert decide(prefixed_star, "bob", Op.READ, TOPIC, "x") is DENIED


def test_acls_apply_to_their_resource_type_only() -> None:
    bindings = [acl(GROUP, "foo", LITERAL, "User:bob", "*", Op.ALL, DENY)]
    assert decide(bindings, "bob", Op.READ, TOPIC, "foo", allow_everyone=True) is ALLOWED
    assert decide(bindings, "bob", Op.READ, GROUP, "foo", allow_everyone=True) is DENIED


def test_allow_everyone_if_no_acl_found_enabled() -> None:
    bindings = [acl(TOPIC, "topic1", LITERAL, "User:Alice", "*", Op.READ, ALLOW)]
    # The resource has ACLs, none of them Bob's: denied even though the default allows.
    assert decide(bindings, "Bob", Op.READ, TOPIC, "topic1", allow_everyone=True) is DENIED
    assert decide(bindings, "Bob", Op.READ, TOPIC, "topic2", allow_everyone=True) is ALLOWED


def test_allow_everyone_if_no_acl_found_disabled() -> None:
    bindings = [acl(TOPIC, "topic1", LITERAL, "User:Alice", "*", Op.READ, ALLOW)]
    assert decide(bindings, "Bob", Op.READ, TOPIC, "topic1", allow_everyone=False) is DENIED
    assert decide(bindings, "Bob", Op.READ, TOPIC, "topic2", allow_everyone=False) is DENIED
    assert decide([], "Bob", Op.READ, TOPIC, "topic2", allow_everyone=False) is DENIED
    assert decide([], "Bob", Op.READ, TOPIC, "topic2", allow_everyone=True) is ALLOWED


def test_resource_with_acls_none_matching_is_denied() -> None:
    # The only ACL on the resource is for another host: it still counts as "an ACL found".
    bindings = [acl(TOPIC, "t", LITERAL, "User:bob", "10.0.0.9", Op.READ, ALLOW)]
    assert decide(bindings, "bob", Op.READ, TOPIC, "t", allow_everyone=True) is DENIED
    # Likewise a DENY for someone else, or an ALLOW of another operation.
    other = [acl(TOPIC, "t", PREFIXED, "User:eve", "*", Op.READ, DENY)]
    assert decide(other, "bob", Op.READ, TOPIC, "t", allow_everyone=True) is DENIED
    write = [acl(TOPIC, "t", LITERAL, "User:bob", "*", Op.WRITE, ALLOW)]
    assert decide(write, "bob", Op.READ, TOPIC, "t", allow_everyone=True) is DENIED


def test_super_users_are_always_allowed() -> None:
    deny_all = [
        acl(TOPIC, "*", LITERAL, "User:*", "*", Op.ALL, DENY),
        acl(GROUP, "wheel", LITERAL, "User:superman", "*", Op.ALL, DENY),
    ]
    for op, rt, name in [(Op.READ, TOPIC, "green1"), (Op.WRITE, GROUP, "wheel")]:
        assert decide(deny_all, "superman", op, rt, name) is ALLOWED
        assert decide([], "superman", op, rt, name) is ALLOWED
        assert decide(deny_all, "bob", op, rt, name, allow_everyone=True) is DENIED
    # Super users are matched on the exact principal string.
    assert decide([], "Superman", Op.READ, TOPIC, "t") is DENIED
    assert decide([], "superman", Op.READ, TOPIC, "t", super_users=frozenset()) is DENIED


# --- AclIndex -------------------------------------------------------------------------------


def test_index_is_immutable_and_deduplicates() -> None:
    a = foo_acl(Op.READ, ALLOW)
    b = bar_acl(Op.READ, DENY)
    empty = AclIndex.build([])
    one = empty.with_added([a, a])
    two = one.with_added([b, a])
    assert (len(empty), len(one), len(two)) == (0, 1, 2)
    assert list(two) == [a, b]
    assert a in two and b not in one
    assert two.without([a]).matching(TOPIC, "foo_x") == ()
    assert two.matching(TOPIC, "foo_x") == (a,)
    assert list(two.without([a, foo_acl(Op.WRITE, ALLOW)])) == [b]


def test_with_added_and_without_leave_the_original_alone() -> None:
    allow = acl(TOPIC, "t", LITERAL, "User:bob", "*", Op.READ, ALLOW)
    deny = acl(TOPIC, "t", LITERAL, "User:bob", "*", Op.ALL, DENY)
    prefixed_deny = acl(TOPIC, "t", PREFIXED, "User:bob", "*", Op.ALL, DENY)
    original = AclIndex.build([allow])

    def result(index: AclIndex) -> AuthorizationResult:
        return authorize(
            acls=index,
            context=RequestContext("User:bob", LOCALHOST),
            action=Action(Op.READ, TOPIC, "t"),
            super_users=frozenset(),
            allow_everyone_if_no_acl_found=True,
        )

    assert result(original.with_added([deny])) is DENIED
    assert result(original.with_added([prefixed_deny])) is DENIED
    assert result(original) is ALLOWED
    assert result(original.without([allow])) is ALLOWED  # no ACL left: the default
    assert list(original) == [allow]
    assert original.matching(TOPIC, "t") == (allow,)


def test_index_matching_wildcard_name_once() -> None:
    star = acl(TOPIC, "*", LITERAL, "User:bob", "*", Op.READ, ALLOW)
    index = AclIndex.build([star, acl(TOPIC, "*", PREFIXED, "User:bob", "*", Op.READ, ALLOW)])
    assert index.matching(TOPIC, "*").count(star) == 1
    assert len(index.matching(TOPIC, "*")) == 2
    assert index.matching(TOPIC, "x") == (star,)


@pytest.mark.parametrize("pattern_type", [PT.ANY, PT.MATCH, PT.UNKNOWN])
def test_index_rejects_non_storable_pattern_types(pattern_type: PatternType) -> None:
    with pytest.raises(ValueError, match=pattern_type.name):
        AclIndex.build([acl(TOPIC, "t", pattern_type, "User:bob", "*", Op.READ, ALLOW)])


# --- AclBindingTest ---------------------------------------------------------------------------

ACL1 = acl(TOPIC, "mytopic", LITERAL, "User:ANONYMOUS", "", Op.ALL, ALLOW)
ACL2 = acl(TOPIC, "mytopic", LITERAL, "User:*", "", Op.READ, ALLOW)
ACL3 = acl(TOPIC, "mytopic2", LITERAL, "User:ANONYMOUS", "127.0.0.1", Op.READ, DENY)
UNKNOWN_ACL = acl(TOPIC, "mytopic2", LITERAL, "User:ANONYMOUS", "127.0.0.1", Op.UNKNOWN, DENY)
ANY_ANONYMOUS = AclBindingFilter(principal="User:ANONYMOUS", operation=Op.ANY)
ANY_DENY = AclBindingFilter(permission_type=DENY)
ANY_MYTOPIC = AclBindingFilter(resource_type=TOPIC, resource_name="mytopic", pattern_type=LITERAL)


@pytest.mark.parametrize(
    ("acl_filter", "binding", "expected"),
    [
        (AclBindingFilter(), ACL1, True),
        (AclBindingFilter(), ACL2, True),
        (AclBindingFilter(), ACL3, True),
        (ANY_ANONYMOUS, ACL1, True),
        (ANY_ANONYMOUS, ACL2, False),
        (ANY_ANONYMOUS, ACL3, True),
        (ANY_DENY, ACL1, False),
        (ANY_DENY, ACL2, False),
        (ANY_DENY, ACL3, True),
        (ANY_MYTOPIC, ACL1, True),
        (ANY_MYTOPIC, ACL2, True),
        (ANY_MYTOPIC, ACL3, False),
        (ANY_ANONYMOUS, UNKNOWN_ACL, True),
        (ANY_DENY, UNKNOWN_ACL, True),
        (ANY_MYTOPIC, UNKNOWN_ACL, False),
    ],
)
def test_binding_filter_matching(
    acl_filter: AclBindingFilter, binding: AclBinding, expected: bool
) -> None:
    assert acl_filter.matches(binding) is expected


def test_filter_fields_none_and_any_are_equivalent() -> None:
    explicit_any = AclBindingFilter(
        resource_type=RT.ANY, pattern_type=PT.ANY, operation=Op.ANY, permission_type=Perm.ANY
    )
    for binding in (ACL1, ACL2, ACL3, UNKNOWN_ACL, *MANY_ACLS):
        assert explicit_any.matches(binding)
        assert AclBindingFilter().matches(binding)


def test_filter_entry_fields_must_match_exactly() -> None:
    assert not AclBindingFilter(host="127.0.0.2").matches(ACL3)
    assert AclBindingFilter(host="127.0.0.1").matches(ACL3)
    assert not AclBindingFilter(host="*").matches(ACL3)
    assert not AclBindingFilter(operation=Op.WRITE).matches(ACL3)
    assert AclBindingFilter(operation=Op.READ).matches(ACL3)
    # An ALL binding is not matched by a filter for READ: filters compare, they don't imply.
    assert not AclBindingFilter(operation=Op.READ).matches(ACL1)
    assert not AclBindingFilter(permission_type=ALLOW).matches(ACL3)
    assert not AclBindingFilter(principal="User:*").matches(ACL3)
    assert AclBindingFilter(operation=Op.UNKNOWN).matches(UNKNOWN_ACL)
    assert not AclBindingFilter(operation=Op.UNKNOWN).matches(ACL3)


def test_unknowns() -> None:
    assert not ACL1.is_unknown()
    assert not ACL2.is_unknown()
    assert not ACL3.is_unknown()
    assert not ANY_ANONYMOUS.is_unknown()
    assert not ANY_DENY.is_unknown()
    assert not ANY_MYTOPIC.is_unknown()
    assert UNKNOWN_ACL.is_unknown()
    assert AclBindingFilter(resource_type=RT.UNKNOWN).is_unknown()
    assert AclBindingFilter(pattern_type=PT.UNKNOWN).is_unknown()
    assert AclBindingFilter(permission_type=Perm.UNKNOWN).is_unknown()


def test_matches_at_most_one() -> None:
    for binding in (ACL1, ACL2, ACL3):
        assert binding.to_filter().find_indefinite_field() is None
        assert binding.to_filter().matches_at_most_one()
        assert binding.to_filter().matches(binding)
    assert not ANY_ANONYMOUS.matches_at_most_one()
    assert not ANY_DENY.matches_at_most_one()
    assert not ANY_MYTOPIC.matches_at_most_one()


EXACT = ACL3.to_filter()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"resource_type": None}, "Resource type is ANY."),
        ({"resource_type": RT.ANY}, "Resource type is ANY."),
        ({"resource_type": RT.UNKNOWN}, "Resource type is UNKNOWN."),
        ({"resource_name": None}, "Resource name is NULL."),
        ({"pattern_type": PT.MATCH}, "Resource pattern type is MATCH."),
        ({"pattern_type": PT.UNKNOWN}, "Resource pattern type is UNKNOWN."),
        ({"principal": None}, "Principal is NULL"),
        ({"host": None}, "Host is NULL"),
        ({"operation": None}, "Operation is ANY"),
        ({"operation": Op.ANY}, "Operation is ANY"),
        ({"operation": Op.UNKNOWN}, "Operation is UNKNOWN"),
        ({"permission_type": None}, "Permission type is ANY"),
        ({"permission_type": Perm.ANY}, "Permission type is ANY"),
        ({"permission_type": Perm.UNKNOWN}, "Permission type is UNKNOWN"),
        # The resource part is reported first.
        ({"resource_name": None, "principal": None}, "Resource name is NULL."),
        # As in Kafka, pattern type ANY with a name is not indefinite.
        ({"pattern_type": PT.ANY}, None),
        ({"pattern_type": None}, None),
    ],
)
def test_find_indefinite_field(changes: dict[str, Any], message: str | None) -> None:
    assert dataclasses.replace(EXACT, **changes).find_indefinite_field() == message


# --- ResourcePatternFilterTest ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("flt", "pattern", "expected"),
    [
        # different resource type / name / name case / pattern type
        ((TOPIC, "Name", LITERAL), (GROUP, "Name", LITERAL), False),
        ((TOPIC, "Different", PREFIXED), (TOPIC, "Name", PREFIXED), False),
        ((TOPIC, "NAME", LITERAL), (TOPIC, "Name", LITERAL), False),
        ((TOPIC, "Name", LITERAL), (TOPIC, "Name", PREFIXED), False),
        # resource type ANY, name null, pattern type ANY / MATCH
        ((RT.ANY, "Name", PREFIXED), (TOPIC, "Name", PREFIXED), True),
        ((TOPIC, None, PREFIXED), (TOPIC, "Name", PREFIXED), True),
        ((TOPIC, None, PT.ANY), (TOPIC, "Name", PREFIXED), True),
        ((TOPIC, None, PT.MATCH), (TOPIC, "Name", PREFIXED), True),
        # literal
        ((TOPIC, "Name", LITERAL), (TOPIC, "Name", LITERAL), True),
        ((TOPIC, "Name", PT.ANY), (TOPIC, "Name", LITERAL), True),
        ((TOPIC, "Name", PT.MATCH), (TOPIC, "Name", LITERAL), True),
        ((TOPIC, "Name-something", PT.MATCH), (TOPIC, "Name", LITERAL), False),
        # literal wildcard
        ((TOPIC, "*", LITERAL), (TOPIC, "*", LITERAL), True),
        ((TOPIC, "Name", LITERAL), (TOPIC, "*", LITERAL), False),
        ((TOPIC, "*", LITERAL), (TOPIC, "Name", LITERAL), False),
        ((TOPIC, "Name", PT.ANY), (TOPIC, "*", LITERAL), False),
        ((TOPIC, "Name", PT.MATCH), (TOPIC, "*", LITERAL), True),
        ((TOPIC, "*", PT.MATCH), (TOPIC, "Name", LITERAL), False),
        # prefixed
        ((TOPIC, "Name", PREFIXED), (TOPIC, "Name", PREFIXED), True),
        ((TOPIC, "Name", PREFIXED), (TOPIC, "Name-something", PREFIXED), False),
        ((TOPIC, "Name-something", PREFIXED), (TOPIC, "Name", PREFIXED), False),
        ((TOPIC, "Name-something", PT.ANY), (TOPIC, "Name", PREFIXED), False),
        ((TOPIC, "Name-something", PT.MATCH), (TOPIC, "Name", PREFIXED), True),
        ((TOPIC, "Name", PT.MATCH), (TOPIC, "Name-something", PREFIXED), False),
        ((TOPIC, "Name", PT.MATCH), (TOPIC, "Name", PREFIXED), True),
        # resource type UNKNOWN is compared, not a wildcard
        ((RT.UNKNOWN, None, PT.ANY), (TOPIC, "Name", LITERAL), False),
    ],
)
def test_resource_pattern_filter(
    flt: tuple[ResourceType, str | None, PatternType],
    pattern: tuple[ResourceType, str, PatternType],
    expected: bool,
) -> None:
    acl_filter = AclBindingFilter(resource_type=flt[0], resource_name=flt[1], pattern_type=flt[2])
    rt, name, pt = pattern
    assert acl_filter.matches(acl(rt, name, pt, "User:bob", "*", Op.READ, ALLOW)) is expected


# --- validation -------------------------------------------------------------------------------

VALID = acl(TOPIC, "t", LITERAL, "User:alice", "*", Op.READ, ALLOW)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"resource_type": RT.UNKNOWN}, "Invalid resourceType UNKNOWN"),
        ({"resource_type": RT.ANY}, "Invalid resourceType ANY"),
        ({"pattern_type": PT.ANY}, "Invalid patternType ANY"),
        ({"pattern_type": PT.MATCH}, "Invalid patternType MATCH"),
        ({"pattern_type": PT.UNKNOWN}, "Invalid patternType UNKNOWN"),
        ({"operation": Op.ANY}, "Invalid operation ANY"),
        ({"operation": Op.UNKNOWN}, "Invalid operation UNKNOWN"),
        ({"permission_type": Perm.ANY}, "Invalid permissionType ANY"),
        ({"permission_type": Perm.UNKNOWN}, "Invalid permissionType UNKNOWN"),
        ({"resource_name": ""}, "Resource name should not be empty"),
        (
            {"resource_type": RT.CLUSTER, "resource_name": "my-cluster"},
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (
            {"resource_type": RT.CLUSTER, "resource_name": "kafka", "pattern_type": PREFIXED},
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (
            {"resource_type": RT.CLUSTER, "resource_name": CLUSTER_NAME, "pattern_type": PREFIXED},
            "The CLUSTER resource must use the LITERAL pattern type",
        ),
        (
            {"principal": "alice"},
            "expected a string in format principalType:principalName but got alice",
        ),
        ({"principal": ""}, "expected a string in format principalType:principalName but got "),
        (
            {"principal": ":alice"},
            "expected a string in format principalType:principalName but got :alice",
        ),
        # The first failing check is the one reported.
        ({"resource_type": RT.ANY, "operation": Op.ANY}, "Invalid resourceType ANY"),
        ({"operation": Op.ANY, "principal": "alice"}, "Invalid operation ANY"),
    ],
)
def test_validation_error(changes: dict[str, Any], message: str) -> None:
    assert dataclasses.replace(VALID, **changes).validation_error() == message


@pytest.mark.parametrize(
    "binding",
    [
        VALID,
        acl(RT.CLUSTER, CLUSTER_NAME, LITERAL, "User:admin", "*", Op.CLUSTER_ACTION, DENY),
        acl(TOPIC, "*", LITERAL, WILDCARD_PRINCIPAL, "10.0.0.1", Op.ALL, ALLOW),
        acl(GROUP, "app-", PREFIXED, "Group:ops", "*", Op.DESCRIBE, ALLOW),
        acl(RT.DELEGATION_TOKEN, "tok", LITERAL, "User:svc:x", "*", Op.DESCRIBE_TOKENS, ALLOW),
    ],
)
def test_valid_bindings(binding: AclBinding) -> None:
    assert binding.validation_error() is None


@pytest.mark.parametrize(
    ("principal", "parsed"),
    [
        ("User:alice", ("User", "alice")),
        ("User:*", ("User", "*")),
        ("User:CN=a,O=b:c", ("User", "CN=a,O=b:c")),
        ("Group:", ("Group", "")),
    ],
)
def test_parse_principal(principal: str, parsed: tuple[str, str]) -> None:
    assert parse_principal(principal) == parsed


@pytest.mark.parametrize("principal", ["", "alice", ":alice", ":"])
def test_parse_principal_rejects(principal: str) -> None:
    with pytest.raises(ValueError, match="principalType:principalName"):
        parse_principal(principal)


# --- enums ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("enum_type", "codes"),
    [
        (
            ResourceType,
            {
                "UNKNOWN": 0,
                "ANY": 1,
                "TOPIC": 2,
                "GROUP": 3,
                "CLUSTER": 4,
                "TRANSACTIONAL_ID": 5,
                "DELEGATION_TOKEN": 6,
                "USER": 7,
            },
        ),
        (PatternType, {"UNKNOWN": 0, "ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4}),
        (
            AclOperation,
            {
                "UNKNOWN": 0,
                "ANY": 1,
                "ALL": 2,
                "READ": 3,
                "WRITE": 4,
                "CREATE": 5,
                "DELETE": 6,
                "ALTER": 7,
                "DESCRIBE": 8,
                "CLUSTER_ACTION": 9,
                "DESCRIBE_CONFIGS": 10,
                "ALTER_CONFIGS": 11,
                "IDEMPOTENT_WRITE": 12,
                "CREATE_TOKENS": 13,
                "DESCRIBE_TOKENS": 14,
            },
        ),
        (AclPermissionType, {"UNKNOWN": 0, "ANY": 1, "DENY": 2, "ALLOW": 3}),
    ],
)
def test_enum_codes_and_names(enum_type: Any, codes: dict[str, int]) -> None:
    assert {m.name: int(m) for m in enum_type} == codes
    for name, code in codes.items():
        member = enum_type.from_name(name)
        assert member.name == name
        assert member == code
        assert enum_type(code) is member
        assert enum_type.from_name(name.lower()) is member


@pytest.mark.parametrize(
    ("enum_type", "name"),
    [
        (ResourceType, "TOPICS"),
        (ResourceType, ""),
        (PatternType, "PREFIX"),
        (AclOperation, "READ_WRITE"),
        (AclPermissionType, "PERMIT"),
    ],
)
def test_enum_from_unknown_name(enum_type: Any, name: str) -> None:
    with pytest.raises(ValueError, match=f"Unknown {enum_type.__name__} name {name!r}"):
        enum_type.from_name(name)


def test_enum_from_name_returns_the_right_type() -> None:
    assert AclOperation.from_name("describe_configs") is AclOperation.DESCRIBE_CONFIGS
    assert PatternType.from_name("Prefixed") is PatternType.PREFIXED
    assert AclPermissionType.from_name("deny") is AclPermissionType.DENY
    assert ResourceType.from_name("transactional_id") is ResourceType.TRANSACTIONAL_ID


# --- properties -------------------------------------------------------------------------------

# Small alphabets, so that names often share prefixes and bindings collide.
NAME_ALPHABET = "ab*"
PRINCIPALS = ["User:alice", "User:bob", WILDCARD_PRINCIPAL, "Group:alice"]
CONTEXT_PRINCIPALS = ["User:alice", "User:bob", "Group:alice", "User:carol"]
HOSTS = [WILDCARD_HOST, "10.0.0.1", "10.0.0.2"]
CLIENT_HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
RESOURCE_TYPES = [TOPIC, GROUP, RT.CLUSTER]
BINDING_OPERATIONS = [op for op in Op if op not in (Op.ANY, Op.UNKNOWN)]
ACTION_OPERATIONS = [op for op in BINDING_OPERATIONS if op is not Op.ALL]

bindings_st = st.builds(
    AclBinding,
    resource_type=st.sampled_from(RESOURCE_TYPES),
    resource_name=st.text(NAME_ALPHABET, max_size=4),
    pattern_type=st.sampled_from([LITERAL, PREFIXED]),
    principal=st.sampled_from(PRINCIPALS),
    host=st.sampled_from(HOSTS),
    operation=st.sampled_from(BINDING_OPERATIONS),
    permission_type=st.sampled_from([ALLOW, DENY]),
)
binding_lists = st.lists(bindings_st, max_size=25)
actions_st = st.builds(
    Action,
    operation=st.sampled_from(ACTION_OPERATIONS),
    resource_type=st.sampled_from(RESOURCE_TYPES),
    resource_name=st.text(NAME_ALPHABET, max_size=5),
)
contexts_st = st.builds(
    RequestContext,
    principal=st.sampled_from(CONTEXT_PRINCIPALS),
    host=st.sampled_from(CLIENT_HOSTS),
)
super_users_st = st.frozensets(st.sampled_from(CONTEXT_PRINCIPALS), max_size=2)


def reference_applies(binding: AclBinding, action: Action) -> bool:
    """Does the binding's resource pattern cover the action's resource? (linear-scan model)"""
    if binding.resource_type != action.resource_type:
        return False
    if binding.pattern_type is LITERAL:
        return binding.resource_name in (action.resource_name, "*")
    return action.resource_name.startswith(binding.resource_name)


REFERENCE_IMPLIED_BY_ALLOW = {
    Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER},
    Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS},
}


def reference_authorize(
    bindings: list[AclBinding],
    context: RequestContext,
    action: Action,
    super_users: frozenset[str],
    allow_everyone_if_no_acl_found: bool,
) -> AuthorizationResult:
    if context.principal in super_users:
        return ALLOWED
    applying = [b for b in bindings if reference_applies(b, action)]
    if not applying:
        return ALLOWED if allow_everyone_if_no_acl_found else DENIED

    def speaks(b: AclBinding) -> bool:
        if b.principal != context.principal and b.principal != "User:*":
            return False
        if b.host != "*" and b.host != context.host:
            return False
        if b.operation is Op.ALL or b.operation is action.operation:
            return True
        implied = REFERENCE_IMPLIED_BY_ALLOW.get(action.operation, set())
        return b.permission_type is ALLOW and b.operation in implied

    speaking = [b for b in applying if speaks(b)]
    if any(b.permission_type is DENY for b in speaking):
        return DENIED
    if any(b.permission_type is ALLOW for b in speaking):
        return ALLOWED
    return DENIED


@settings(max_examples=300)
@given(
    bindings=binding_lists,
    actions=st.lists(actions_st, min_size=1, max_size=8),
    context=contexts_st,
    super_users=super_users_st,
    allow_everyone=st.booleans(),
)
def test_index_agrees_with_linear_scan(
    bindings: list[AclBinding],
    actions: list[Action],
    context: RequestContext,
    super_users: frozenset[str],
    allow_everyone: bool,
) -> None:
    index = AclIndex.build(bindings)
    assert len(index) == len(set(bindings))
    assert set(index) == set(bindings)
    for action in actions:
        found = index.matching(action.resource_type, action.resource_name)
        assert len(found) == len(set(found)), "a binding was returned twice"
        assert set(found) == {b for b in bindings if reference_applies(b, action)}
        expected = reference_authorize(bindings, context, action, super_users, allow_everyone)
        actual = authorize(
            acls=index,
            context=context,
            action=action,
            super_users=super_users,
            allow_everyone_if_no_acl_found=allow_everyone,
        )
        assert actual is expected, action


@given(
    bindings=binding_lists,
    action=actions_st,
    context=contexts_st,
    deny_principal_is_wildcard=st.booleans(),
    deny_host_is_wildcard=st.booleans(),
    allow_everyone=st.booleans(),
)
def test_deny_all_on_the_exact_resource_always_denies(
    bindings: list[AclBinding],
    action: Action,
    context: RequestContext,
    deny_principal_is_wildcard: bool,
    deny_host_is_wildcard: bool,
    allow_everyone: bool,
) -> None:
    deny_all = AclBinding(
        resource_type=action.resource_type,
        resource_name=action.resource_name,
        pattern_type=LITERAL,
        principal=WILDCARD_PRINCIPAL if deny_principal_is_wildcard else context.principal,
        host=WILDCARD_HOST if deny_host_is_wildcard else context.host,
        operation=Op.ALL,
        permission_type=DENY,
    )
    index = AclIndex.build(bindings).with_added([deny_all])
    result = authorize(
        acls=index,
        context=context,
        action=action,
        super_users=frozenset({"User:superman"}),
        allow_everyone_if_no_acl_found=allow_everyone,
    )
    assert result is DENIED


@settings(max_examples=200)
@given(
    base=binding_lists,
    extra=binding_lists,
    actions=st.lists(actions_st, min_size=1, max_size=8),
    context=contexts_st,
    allow_everyone=st.booleans(),
)
def test_with_added_then_without_restores_decisions(
    base: list[AclBinding],
    extra: list[AclBinding],
    actions: list[Action],
    context: RequestContext,
    allow_everyone: bool,
) -> None:
    added = [b for b in extra if b not in set(base)]
    original = AclIndex.build(base)

    def decisions(index: AclIndex) -> list[AuthorizationResult]:
        return [
            authorize(
                acls=index,
                context=context,
                action=action,
                super_users=frozenset(),
                allow_everyone_if_no_acl_found=allow_everyone,
            )
            for action in actions
        ]

    before = decisions(original)
    grown = original.with_added(added)
    assert decisions(original) == before, "with_added changed the original index"
    restored = grown.without(added)
    assert len(grown) == len(set(base) | set(added))
    assert list(restored) == list(original)
    for action in actions:
        key = (action.resource_type, action.resource_name)
        assert set(restored.matching(*key)) == set(original.matching(*key))
    assert decisions(restored) == before
    # Neither call changed the index it was called on.
    assert list(original) == list(dict.fromkeys(base))
    assert decisions(original) == before
    assert set(grown) == set(base) | set(added)
