"""Kafka's ssl.principal.mapping.rules over a client certificate's name (issue 34)."""

from __future__ import annotations

import pytest

from wire.tls_principal import NoMatchingRule, distinguished_name, mapped_name, parse_rules

PEERCERT = {
    "subject": (
        (("countryName", "US"),),
        (("organizationName", "acme, inc"),),
        (("organizationalUnitName", "ops"),),
        (("commonName", "Alice"),),
    )
}


def test_the_name_is_rfc_2253_as_java_prints_it() -> None:
    assert distinguished_name(PEERCERT) == "CN=Alice,OU=ops,O=acme\\, inc,C=US"


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ("DEFAULT", "CN=Alice,OU=ops,O=acme\\, inc,C=US"),
        ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/L, DEFAULT", "alice@ops"),
        ("RULE:^CN=(.*?),.*$/$1/U", "ALICE"),
        ("RULE:^CN=bob,.*$/bob/, RULE:^CN=(.*?),.*$/$1/", "Alice"),
        ("RULE:^CN=bob,.*$/bob/, DEFAULT", "CN=Alice,OU=ops,O=acme\\, inc,C=US"),
    ],
)
def test_the_first_matching_rule_maps_it(rules: str, expected: str) -> None:
    assert mapped_name(distinguished_name(PEERCERT), parse_rules(rules)) == expected


def test_no_matching_rule_refuses_and_bad_rules_do_not_parse() -> None:
    with pytest.raises(NoMatchingRule):
        mapped_name("CN=Alice", parse_rules("RULE:^CN=bob$/bob/"))
    for bad in ("RULE:^CN=(.*)", "SOMETHING", "RULE:a/b/X"):
        with pytest.raises(ValueError):
            parse_rules(bad)
