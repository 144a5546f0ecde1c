"""Listeners as Kafka names them: `NAME://HOST:PORT`, the name's security protocol from
`listener.security.protocol.map`, and a role: the names in `controller.listener.names` are the
controller's (brokers reach it there: Envelope and, later, their lifecycle RPCs); every other
listener serves clients. No Django, no I/O."""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Iterable, Mapping

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
CLIENT = "client"
CONTROLLER = "controller"
ROLES = (CLIENT, CONTROLLER)
# Kafka's controller.listener.names as this control plane defaults it, and the protocol that
# name has when `listener.security.protocol.map` does not say (Kafka 4's default map does too).
DEFAULT_CONTROLLER_LISTENER_NAMES = ("CONTROLLER",)
DEFAULT_SECURITY_PROTOCOL_MAP = {name: name for name in SECURITY_PROTOCOLS} | {
    "CONTROLLER": "PLAINTEXT"
}
LISTENER_PATTERN = re.compile(
    r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)://"
    r"(?P<host>\[[0-9a-fA-F:.]+\]|[^:/\[\]]*):(?P<port>\d{1,5})$"
)


@dataclasses.dataclass(frozen=True, slots=True)
class Listener:
    """`NAME://host:port`, as Kafka's `listeners`; port 0 binds a free one."""

    protocol: str  # the security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    host: str
    port: int
    name: str = ""  # the listener name (Kafka's ListenerName); "" is the protocol's own
    role: str = CLIENT

    @property
    def listener_name(self) -> str:
        return self.name or self.protocol

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def controller(self) -> bool:
        return self.role == CONTROLLER

    @classmethod
    def parse(
        cls,
        text: str,
        security_protocol_map: Mapping[str, str] | None = None,
        controller_listener_names: Iterable[str] = DEFAULT_CONTROLLER_LISTENER_NAMES,
    ) -> Listener:
        """`NAME://HOST:PORT` (an IPv6 host in brackets); ValueError when malformed or when
        the name has no security protocol. Not urlsplit: a URL scheme has no underscore, and
        SASL_PLAINTEXT has."""
        match = LISTENER_PATTERN.match(text.strip())
        if match is None:
            raise ValueError(f"{text!r}: expected NAME://HOST:PORT")
        name = match["name"].upper()
        protocols = dict(DEFAULT_SECURITY_PROTOCOL_MAP)
        protocols.update(security_protocol_map or {})
        protocol = protocols.get(name)
        if protocol is None:
            known = ", ".join(SECURITY_PROTOCOLS)
            raise ValueError(
                f"{text!r}: listener {name} has no security protocol: name one of {known}, or "
                f"map it (--listener-security-protocol-map {name}:PLAINTEXT)"
            )
        port = int(match["port"])
        if port > 65535:
            raise ValueError(f"{text!r}: port {port} is out of range")
        host = match["host"].strip("[]") or "0.0.0.0"
        controllers = {n.strip().upper() for n in controller_listener_names}
        role = CONTROLLER if name in controllers else CLIENT
        return cls(protocol, host, port, "" if name == protocol else name, role)


def parse_security_protocol_map(text: str | None) -> dict[str, str]:
    """Kafka's `listener.security.protocol.map`: `NAME:PROTOCOL[,NAME:PROTOCOL...]`."""
    mapped: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, separator, protocol = item.strip().partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not separator or not name or protocol not in SECURITY_PROTOCOLS:
            known = ", ".join(SECURITY_PROTOCOLS)
            raise ValueError(
                f"{item.strip()!r}: expected NAME:PROTOCOL, the protocol one of {known}"
            )
        mapped[name] = protocol
    return mapped


def parse_listeners(
    texts: Iterable[str],
    security_protocol_map: str | None = None,
    controller_listener_names: str | None = None,
) -> list[Listener]:
    """Every `--listener`, with the map and the controller names as serve_kafka takes them
    (both comma-separated, as Kafka's properties); ValueError naming what is wrong."""
    protocols = parse_security_protocol_map(security_protocol_map)
    names = (
        [n for n in controller_listener_names.split(",") if n.strip()]
        if controller_listener_names is not None
        else list(DEFAULT_CONTROLLER_LISTENER_NAMES)
    )
    listeners = [Listener.parse(text, protocols, names) for text in texts]
    seen: set[str] = set()
    for listener in listeners:
        if listener.listener_name in seen:
            raise ValueError(f"listener {listener.listener_name} is named twice")
        seen.add(listener.listener_name)
    return listeners


def require_private_plaintext_controllers(listeners: list[Listener]) -> None:
    """A PLAINTEXT controller listener whose connections are a broker principal proves nothing
    about its peers: it must be bound to loopback or a private address."""
    for listener in listeners:
        if not (listener.controller and listener.protocol == "PLAINTEXT"):
            continue
        try:
            address = ipaddress.ip_address(listener.host)
            private = address.is_loopback or address.is_private
        except ValueError:
            private = listener.host == "localhost"
        if not private or listener.host in ("0.0.0.0", "::"):
            raise ValueError(
                f"controller listener {listener.listener_name} binds {listener.host}: a PLAINTEXT "
                "controller listener mapped to a broker principal binds loopback or a private "
                "address only"
            )
