"""The principal of an SSL connection with a client certificate: its subject's distinguished
name (RFC 2253, as Java's X500Principal.getName() writes it), mapped by Kafka's
`ssl.principal.mapping.rules` (SslPrincipalMapper): `DEFAULT` keeps the whole name;
`RULE:pattern/replacement/[L|U]` takes the first rule whose pattern matches the whole name,
replaces (`$1` for a group) and lower- or upper-cases. No rule matching fails the connection,
as Kafka refuses it. Without a certificate an SSL connection is User:ANONYMOUS."""

from __future__ import annotations

import dataclasses
import re
import ssl
from collections.abc import Sequence
from typing import Any

# Attribute names as RFC 2253 (and Java) print them; any other keeps Python's name.
SHORT_NAMES = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:([^/]*)/([^/]*)/([LU])?)\s*(?:,|$)")


class NoMatchingRule(ValueError):
    """No ssl.principal.mapping.rules rule matched the certificate's name."""


def _escaped(value: str) -> str:
    escaped = re.sub(r'([,+"\\<>;=])', r"\\\1", value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def distinguished_name(peercert: dict[str, Any]) -> str:
    """The subject of `ssl.getpeercert()` in RFC 2253 order (the last RDN first)."""
    rdns = []
    for rdn in reversed(peercert.get("subject", ())):
        rdns.append(
            "+".join(f"{SHORT_NAMES.get(name, name)}={_escaped(value)}" for name, value in rdn)
        )
    return ",".join(rdns)


@dataclasses.dataclass(frozen=True, slots=True)
class Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if not self.pattern.fullmatch(name):
            return None
        mapped = self.pattern.sub(re.sub(r"\$(\d+)", r"\\\1", self.replacement), name, count=1)
        return (
            mapped.lower() if self.case == "L" else mapped.upper() if self.case == "U" else mapped
        )


def parse_rules(text: str) -> list[Rule]:
    """Kafka's ssl.principal.mapping.rules (ValueError when it does not parse)."""
    rules: list[Rule] = []
    position, text = 0, text.strip()
    while position < len(text):
        match = _RULE.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(f"invalid ssl.principal.mapping.rules at {text[position:]!r}")
        default, pattern, replacement, case = match.groups()
        rules.append(Rule(None) if default else Rule(re.compile(pattern), replacement, case or ""))
        position = match.end()
    return rules or [Rule(None)]


def mapped_name(name: str, rules: Sequence[Rule]) -> str:
    for rule in rules:
        mapped = rule.apply(name)
        if mapped is not None:
            return mapped
    raise NoMatchingRule(f"no ssl.principal.mapping.rules rule matches {name!r}")


def ssl_context(
    certfile: str, keyfile: str, cafile: str | None = None, client_auth: str | None = None
) -> ssl.SSLContext:
    """The SSL listeners' context: TLS 1.2 and newer; client certificates (verified against
    `cafile`) as Kafka's `ssl.client.auth` says: none, requested (the default with a CA) or
    required."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=cafile)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile, keyfile)
    auth = client_auth or ("requested" if cafile else "none")
    if auth not in ("none", "requested", "required"):
        raise ValueError(f"ssl.client.auth {auth!r} is not one of none, requested, required")
    if auth != "none" and not cafile:
        raise ValueError(f"ssl.client.auth={auth} needs the CA of client certificates")
    context.verify_mode = {
        "none": ssl.CERT_NONE,
        "requested": ssl.CERT_OPTIONAL,
        "required": ssl.CERT_REQUIRED,
    }[auth]
    return context
