"""docker/compose.yaml and docker/Dockerfile, checked by parsing (no Docker engine needed).

First a JSON schema (a focused subset of the Compose specification), then the semantics the
schema cannot express: dependencies exist and are healthchecked, the application services share
one environment, two controller replicas, gunicorn without its control socket and with the
control plane's worker (slow clients time out), a public and an internal listener each serving
its own URL conf, unique host ports, declared volumes, a build
context at the repository root, a non-root image; with `--profile kafka`, stock Apache Kafka
brokers following the control plane's controller listener (the voter, its protocol, the node ids,
the tokens, the entrypoint script mounted where the service runs it). The entrypoint script
(scripts/kafka/broker-entrypoint.sh) is run here too, with fake inputs: the server.properties it
writes against stock_kafka/broker_config.py's, the cluster id it reads from a stub of the
internal listener, the format and start commands it runs (stubs of Kafka's scripts); the token it
is given never in its output.

Every check is a function that returns its problems; each is run once on the real files (no
problems) and once on a deliberately broken copy (the problem is found), so none can pass
vacuously. No test touches the database.
"""

from __future__ import annotations

import copy
import http.server
import itertools
import json
import os
import re
import stat
import subprocess
import threading
import tomllib
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCKER_DIR = REPO_ROOT / "docker"
COMPOSE_FILE = DOCKER_DIR / "compose.yaml"

# Services that run the project's own image; each must get the whole shared environment.
APP_ENV_ANCHOR = "x-app-env"
REQUIRED_APP_ENV = ("DATABASE_URL", "CELERY_BROKER_URL")

# Stock Kafka brokers (`--profile kafka`) and what they need.
KAFKA_PROFILE = "kafka"
KAFKA_IMAGE = "apache/kafka"
BROKER_ENTRYPOINT = REPO_ROOT / "scripts" / "kafka" / "broker-entrypoint.sh"
BROKER_PRINCIPALS = "kafka-broker-principals"  # the one-shot that makes their principals

_STRING_LIST = {"type": "array", "items": {"type": "string"}}
_STRING_OR_LIST = {"oneOf": [{"type": "string"}, _STRING_LIST]}
_DURATION = {"type": "string", "pattern": r"^(\d+(\.\d+)?(us|ms|s|m|h))+$"}

COMPOSE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["services"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[a-z0-9][a-z0-9_-]*$"},
        "services": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": r"^[a-zA-Z0-9._-]+$"},
            "additionalProperties": {"$ref": "#/$defs/service"},
        },
        "volumes": {"$ref": "#/$defs/named_objects"},
        "networks": {"$ref": "#/$defs/named_objects"},
    },
    "patternProperties": {"^x-": {}},
    "additionalProperties": False,
    "$defs": {
        "named_objects": {
            "type": "object",
            "additionalProperties": {"type": ["object", "null"]},
        },
        "service": {
            "type": "object",
            "anyOf": [{"required": ["image"]}, {"required": ["build"]}],
            "properties": {
                "image": {"type": "string", "minLength": 1},
                "build": {
                    "oneOf": [
                        {"type": "string"},
                        {
                            "type": "object",
                            "properties": {
                                "context": {"type": "string"},
                                "dockerfile": {"type": "string"},
                                "args": {"$ref": "#/$defs/environment"},
                                "target": {"type": "string"},
                            },
                            "additionalProperties": False,
                        },
                    ]
                },
                "command": _STRING_OR_LIST,
                "entrypoint": _STRING_OR_LIST,
                "depends_on": {
                    "oneOf": [
                        {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                        {
                            "type": "object",
                            "additionalProperties": {
                                "type": "object",
                                "required": ["condition"],
                                "properties": {
                                    "condition": {
                                        "enum": [
                                            "service_started",
                                            "service_healthy",
                                            "service_completed_successfully",
                                        ]
                                    },
                                    "restart": {"type": "boolean"},
                                    "required": {"type": "boolean"},
                                },
                                "additionalProperties": False,
                            },
                        },
                    ]
                },
                "healthcheck": {
                    "type": "object",
                    "properties": {
                        "test": {
                            "oneOf": [
                                {"type": "string"},
                                {
                                    "type": "array",
                                    "items": {"type": "string"},
                                    "minItems": 1,
                                    "prefixItems": [{"enum": ["NONE", "CMD", "CMD-SHELL"]}],
                                },
                            ]
                        },
                        "interval": _DURATION,
                        "timeout": _DURATION,
                        "start_period": _DURATION,
                        "start_interval": _DURATION,
                        "retries": {"type": "integer", "minimum": 0},
                        "disable": {"type": "boolean"},
                    },
                    "additionalProperties": False,
                },
                # Strings only: unquoted 22:22 is a base-60 integer in YAML 1.1.
                "ports": {
                    "type": "array",
                    "items": {
                        "type": "string",
                        "pattern": r"^(\d{1,3}(\.\d{1,3}){3}:)?\d{1,5}:\d{1,5}(/(tcp|udp))?$",
                    },
                },
                # Strings only: unquoted `no` is the boolean false in YAML 1.1.
                "restart": {
                    "type": "string",
                    "pattern": r"^(no|always|unless-stopped|on-failure(:\d+)?)$",
                },
                "deploy": {
                    "type": "object",
                    "properties": {"replicas": {"type": "integer", "minimum": 0}},
                },
                "environment": {"$ref": "#/$defs/environment"},
                "profiles": {
                    "type": "array",
                    "items": {"type": "string", "pattern": r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$"},
                },
                "volumes": {"type": "array", "items": {"type": ["string", "object"]}},
                "tmpfs": _STRING_OR_LIST,
                "stop_grace_period": _DURATION,
                "container_name": {"type": "string"},
                "user": {"type": "string"},
                "working_dir": {"type": "string"},
                "env_file": _STRING_OR_LIST,
                "networks": {"type": ["array", "object"]},
                "expose": {"type": "array"},
                "labels": {"type": ["array", "object"]},
                "logging": {"type": "object"},
                "init": {"type": "boolean"},
                "stop_signal": {"type": "string"},
                "pull_policy": {"enum": ["always", "never", "missing", "build"]},
            },
            "patternProperties": {"^x-": {}},
            "additionalProperties": False,
        },
        "environment": {
            "oneOf": [
                {
                    "type": "object",
                    "propertyNames": {"pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
                    "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
                },
                {"type": "array", "items": {"type": "string", "pattern": r"^[A-Za-z_]\w*(=|$)"}},
            ]
        },
    },
}


def load_pyproject() -> dict[str, Any]:
    with (REPO_ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)


def load_compose() -> dict[str, Any]:
    """The parsed document, with YAML aliases turned into independent copies.

    The JSON round trip also proves the document is plain JSON data (what the schema describes),
    and lets a test break one service without breaking every service that shares an anchor.
    """
    with COMPOSE_FILE.open() as f:
        document = yaml.safe_load(f)
    assert isinstance(document, dict)
    return json.loads(json.dumps(document))


@pytest.fixture
def compose() -> dict[str, Any]:
    return load_compose()


def schema_errors(document: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(COMPOSE_SCHEMA)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
        for e in validator.iter_errors(document)
    ]


# --- helpers ------------------------------------------------------------------------------


def command_words(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    return command.split() if isinstance(command, str) else [str(w) for w in command]


def environment_of(service: dict[str, Any]) -> dict[str, Any]:
    env = service.get("environment", {})
    if isinstance(env, list):
        return dict(item.split("=", 1) if "=" in item else (item, None) for item in env)
    return dict(env)


def depends_on_of(service: dict[str, Any]) -> dict[str, str]:
    """depends_on as {target: condition}; the short (list) form means service_started."""
    deps = service.get("depends_on", {})
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: spec["condition"] for name, spec in deps.items()}


def app_services(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Services built from the project's Dockerfile (or running the image it builds)."""
    built_images = {
        s["image"] for s in document["services"].values() if "build" in s and "image" in s
    }
    return {
        name: s
        for name, s in document["services"].items()
        if "build" in s or s.get("image") in built_images
    }


def build_of(service: dict[str, Any]) -> tuple[str, str]:
    build = service["build"]
    if isinstance(build, str):
        return build, "Dockerfile"
    return build.get("context", "."), build.get("dockerfile", "Dockerfile")


def command_words_raw(service: dict[str, Any]) -> list[str]:
    """The command as a list, each item whole (a `sh -c` script stays one word)."""
    command = service.get("command", [])
    return [command] if isinstance(command, str) else [str(w) for w in command]


def option_values(words: list[str], option: str) -> list[str]:
    """Every value of `option VALUE` in a command line."""
    return [value for flag, value in itertools.pairwise(words) if flag == option]


def interpolated(value: Any) -> str:
    """A value as Compose hands it over with nothing set on the host: `${VAR:-default}` and
    `${VAR-default}` are their default, `$$` is `$`."""
    text = re.sub(r"\$\{[A-Za-z_]\w*:?-([^}]*)\}", r"\1", str(value))
    return text.replace("$$", "$")


def serve_kafka_listeners(service: dict[str, Any]) -> list[Any]:
    """The listeners a `serve_kafka` service serves, as serve_kafka parses its options."""
    from wire.listeners import parse_listeners

    words = [str(word) for word in command_words(service)]
    maps = option_values(words, "--listener-security-protocol-map")
    names = option_values(words, "--controller-listener-names")
    return parse_listeners(
        option_values(words, "--listener"), maps[-1] if maps else None, names[-1] if names else None
    )


def serve_kafka_services(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n: s for n, s in document["services"].items() if "serve_kafka" in command_words(s)}


def kafka_brokers(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Services running Apache's Kafka image."""
    return {
        name: s
        for name, s in document["services"].items()
        if str(s.get("image", "")).split(":")[0] == KAFKA_IMAGE
    }


def mounts_of(service: dict[str, Any]) -> list[dict[str, Any]]:
    """Every volume of a service in the long form: type, source, target, read_only."""
    mounts = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            mounts.append(volume)
            continue
        source, target, *mode = volume.split(":")
        kind = "bind" if source.startswith(("/", ".", "~", "$")) else "volume"
        read_only = bool(mode) and "ro" in mode[0].split(",")
        mounts.append({"type": kind, "source": source, "target": target, "read_only": read_only})
    return mounts


def gunicorn_port(service: dict[str, Any]) -> int | None:
    binds = option_values([str(w) for w in command_words(service)], "--bind")
    return int(binds[0].rsplit(":", 1)[1]) if binds else None


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, arguments = line.partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
    if pending:
        keyword, _, arguments = pending.strip().partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
    return instructions


# --- semantic checks: each returns a list of problems -------------------------------------


def check_depends_on_targets_exist(document: dict[str, Any]) -> list[str]:
    services = document["services"]
    return [
        f"{name} depends on undefined service {target}"
        for name, s in services.items()
        for target in depends_on_of(s)
        if target not in services
    ]


def check_healthy_dependencies_have_healthchecks(document: dict[str, Any]) -> list[str]:
    services = document["services"]
    problems = []
    for name, s in services.items():
        for target, condition in depends_on_of(s).items():
            if condition != "service_healthy" or target not in services:
                continue
            healthcheck = services[target].get("healthcheck")
            if not healthcheck or healthcheck.get("disable") or "test" not in healthcheck:
                problems.append(f"{name} waits for {target} to be healthy; it has no healthcheck")
    return problems


def check_completed_dependencies_are_one_shot(document: dict[str, Any]) -> list[str]:
    services = document["services"]
    problems = []
    for name, s in services.items():
        for target, condition in depends_on_of(s).items():
            if (
                condition == "service_completed_successfully"
                and target in services
                and services[target].get("restart", "no") != "no"
            ):
                problems.append(f"{name} waits for {target} to finish; it restarts")
    return problems


def check_app_services_share_environment(document: dict[str, Any]) -> list[str]:
    shared = document.get(APP_ENV_ANCHOR)
    if not isinstance(shared, dict):
        return [f"no {APP_ENV_ANCHOR} mapping"]
    problems = [f"{APP_ENV_ANCHOR} lacks {key}" for key in REQUIRED_APP_ENV if key not in shared]
    if not re.fullmatch(r"\$\{CP_SECRET_KEY:\?[^}]*\}", str(shared.get("CP_SECRET_KEY", ""))):
        problems.append("CP_SECRET_KEY must be required from the environment: ${CP_SECRET_KEY:?..}")
    apps = app_services(document)
    if not apps:
        problems.append("no application services")
    for name, s in apps.items():
        env = environment_of(s)
        problems += [
            f"{name}: {key}={env.get(key)!r}, not {value!r} as in {APP_ENV_ANCHOR}"
            for key, value in shared.items()
            if env.get(key) != value
        ]
    return problems


def check_app_services_wait_for_backing_services(document: dict[str, Any]) -> list[str]:
    problems = []
    for name, s in app_services(document).items():
        deps = depends_on_of(s)
        for backing in ("postgres", "redis"):
            if deps.get(backing) != "service_healthy":
                problems.append(f"{name} does not wait for {backing} to be healthy")
        if name != "migrate" and deps.get("migrate") != "service_completed_successfully":
            problems.append(f"{name} does not wait for migrate to complete")
    return problems


def check_two_controllers(document: dict[str, Any]) -> list[str]:
    replicas = 0
    for s in document["services"].values():
        if "run_controller" in command_words(s):
            replicas += s.get("deploy", {}).get("replicas", 1)
            if s.get("restart") != "always":
                return ["a controller must restart `always` (it exits 3 on a lost lease)"]
    return [] if replicas >= 2 else [f"{replicas} controller replica(s); one standby is needed"]


def check_gunicorn_without_control_socket(document: dict[str, Any]) -> list[str]:
    problems = []
    listeners = 0
    for name, s in document["services"].items():
        words = command_words(s)
        if "gunicorn" in words:
            listeners += 1
            if "--no-control-socket" not in words:
                problems.append(f"{name}: gunicorn without --no-control-socket")
    return problems if listeners >= 2 else [*problems, "expected a public and internal listener"]


SERVER_WORKER = "controlplane.server.worker.ControlPlaneWorker"


def check_listeners_run_the_control_planes_worker(document: dict[str, Any]) -> list[str]:
    """gunicorn's gthread worker gives a half-sent request a thread and no deadline (issue 12):
    every listener runs the control plane's worker, with its header and body deadlines."""
    problems = []
    for name, s in document["services"].items():
        words = [str(w) for w in command_words(s)]
        if "gunicorn" not in words:
            continue
        classes = [b for a, b in itertools.pairwise(words) if a == "--worker-class"]
        if classes != [SERVER_WORKER]:
            problems.append(f"{name}: --worker-class {classes or 'unset'}, not {SERVER_WORKER}")
    return problems


def check_listeners_are_separate(document: dict[str, Any]) -> list[str]:
    """A public and an internal listener, separate services: the internal one is started with
    CP_LISTENER=internal (it serves the brokers' API and /metrics alone, so its healthcheck
    scrapes /metrics), the public one with CP_LISTENER unset or `public`."""
    listeners: dict[str, str] = {}
    problems = []
    for name, s in document["services"].items():
        if "gunicorn" not in command_words(s):
            continue
        listener = str(environment_of(s).get("CP_LISTENER") or "public")
        listeners[name] = listener
        if listener not in {"public", "internal"}:
            problems.append(f"{name}: CP_LISTENER={listener!r}, not public or internal")
        test = " ".join(str(w) for w in s.get("healthcheck", {}).get("test", []))
        if listener == "internal" and "/metrics" not in test:
            problems.append(f"{name}: the internal listener's healthcheck must GET /metrics")
    for wanted in ("public", "internal"):
        if wanted not in listeners.values():
            problems.append(f"no gunicorn service with CP_LISTENER={wanted}")
    return problems


def check_kafka_listener(document: dict[str, Any]) -> list[str]:
    """Kafka's protocol for clients is a service of its own running `serve_kafka` with at least
    one client --listener PROTOCOL://HOST:PORT whose port is published; every serve_kafka has
    its metrics directory (its counters join /metrics in multiprocess mode)."""
    problems = []
    client_services = []
    for name, service in serve_kafka_services(document).items():
        if "PROMETHEUS_MULTIPROC_DIR" not in environment_of(service):
            problems.append(f"{name}: serve_kafka without PROMETHEUS_MULTIPROC_DIR")
        try:
            listeners = serve_kafka_listeners(service)
        except ValueError as error:
            problems.append(f"{name}: {error}")
            continue
        if not listeners:
            problems.append(f"{name}: serve_kafka without --listener")
        clients = [listener for listener in listeners if not listener.controller]
        if clients:
            client_services.append(name)
        published = {str(port).split(":")[-1] for port in service.get("ports", [])}
        problems += [
            f"{name}: listener {listener.listener_name}:{listener.port} is not published"
            for listener in clients
            if str(listener.port) not in published
        ]
    if len(client_services) != 1:
        problems.append(f"{len(client_services)} services serve Kafka's clients: want one")
    return problems


def controller_listener(document: dict[str, Any]) -> tuple[str, Any] | None:
    """(service, listener) of the one serve_kafka CONTROLLER listener, or None."""
    found = [
        (name, listener)
        for name, service in serve_kafka_services(document).items()
        for listener in serve_kafka_listeners(service)
        if listener.controller
    ]
    return found[0] if len(found) == 1 else None


def check_kafka_controller_listener(document: dict[str, Any]) -> list[str]:
    """Stock brokers follow one CONTROLLER listener of serve_kafka, SASL_PLAINTEXT (a broker
    principal's name and token, docs/operators/real-brokers.md). A broker follows the leader at
    the endpoint that listener advertises (Raft Fetch NodeEndpoints), so its advertised host is
    its service's name on Compose's network, where brokers resolve it."""
    found = controller_listener(document)
    if found is None:
        return ["want exactly one serve_kafka CONTROLLER listener"]
    name, listener = found
    problems = []
    if listener.protocol != "SASL_PLAINTEXT":
        problems.append(f"{name}: the controller listener is {listener.protocol}")
    words = [str(w) for w in command_words(document["services"][name])]
    advertised = option_values(words, "--advertised-host")
    if advertised != [name]:
        problems.append(f"{name}: --advertised-host {advertised}, not its service name {name}")
    return problems


def check_default_services_need_no_profile(document: dict[str, Any]) -> list[str]:
    """`up` without a profile starts what it always did: no service outside a profile waits for
    one inside, and a profile's services wait only for services outside every profile or in
    their own profile."""
    services = document["services"]
    problems = []
    for name, s in services.items():
        own = set(s.get("profiles", []))
        for target in depends_on_of(s):
            theirs = set(services.get(target, {}).get("profiles", []))
            if theirs and not theirs & own:
                problems.append(f"{name} waits for {target}, which only starts with {theirs}")
    return problems


def broker_env(service: dict[str, Any]) -> dict[str, str]:
    return {key: interpolated(value) for key, value in environment_of(service).items()}


def check_kafka_brokers_run_stock_kafka(document: dict[str, Any]) -> list[str]:
    """Apache's own image at the version the tests' jars pin (scripts/kafka/pom.xml), under the
    `kafka` profile, with a small heap and a healthcheck."""
    from stock_kafka.jars import pinned_version

    brokers = kafka_brokers(document)
    if not brokers:
        return [f"no service runs {KAFKA_IMAGE}"]
    problems = []
    wanted = f"{KAFKA_IMAGE}:{pinned_version()}"
    for name, s in brokers.items():
        if s["image"] != wanted:
            problems.append(f"{name}: image {s['image']}, not {wanted}")
        if s.get("profiles") != [KAFKA_PROFILE]:
            problems.append(f"{name}: profiles {s.get('profiles')}, not [{KAFKA_PROFILE}]")
        if not re.search(r"-Xmx\d+[mM]\b", broker_env(s).get("KAFKA_HEAP_OPTS", "")):
            problems.append(f"{name}: no small KAFKA_HEAP_OPTS (-Xmx...m)")
        if "test" not in s.get("healthcheck", {}):
            problems.append(f"{name}: no healthcheck")
    return problems


def check_kafka_brokers_follow_the_controller(document: dict[str, Any]) -> list[str]:
    """Each broker's voter is the serve_kafka controller listener (its service:port) with the
    control plane's CP_CONTROLLER_ID; it reads the cluster id from the internal listener (a
    host the listener's CP_ALLOWED_HOSTS accepts) and waits for both to be healthy."""
    services = document["services"]
    found = controller_listener(document)
    if found is None:
        return ["no controller listener to follow"]
    controller_service, listener = found
    app_env = document.get(APP_ENV_ANCHOR, {})
    controller_id = interpolated(app_env.get("CP_CONTROLLER_ID", ""))
    allowed = interpolated(app_env.get("CP_ALLOWED_HOSTS", "")).split(",")
    problems = []
    if not controller_id.isdigit():
        problems.append(f"{APP_ENV_ANCHOR}: CP_CONTROLLER_ID {controller_id!r} is not an id")
    for name, s in kafka_brokers(document).items():
        env = broker_env(s)
        deps = depends_on_of(s)
        address = f"{controller_service}:{listener.port}"
        if env.get("CONTROLLER_ADDRESS") != address:
            problems.append(
                f"{name}: CONTROLLER_ADDRESS {env.get('CONTROLLER_ADDRESS')}, not {address}"
            )
        if env.get("CONTROLLER_ID") != controller_id:
            problems.append(
                f"{name}: CONTROLLER_ID {env.get('CONTROLLER_ID')}, not {controller_id}"
            )
        if deps.get(controller_service) != "service_healthy":
            problems.append(f"{name} does not wait for {controller_service} to be healthy")
        url = urllib.parse.urlsplit(env.get("CONTROLPLANE_INTERNAL_URL", ""))
        internal = services.get(url.hostname or "", {})
        if (
            url.scheme != "http"
            or environment_of(internal).get("CP_LISTENER") != "internal"
            or gunicorn_port(internal) != url.port
        ):
            problems.append(f"{name}: CONTROLPLANE_INTERNAL_URL is not the internal listener")
        elif url.hostname not in allowed:
            problems.append(f"{name}: {url.hostname} is not in CP_ALLOWED_HOSTS")
        elif deps.get(url.hostname) != "service_healthy":
            problems.append(f"{name} does not wait for {url.hostname} to be healthy")
    return problems


def check_kafka_broker_identities(document: dict[str, Any]) -> list[str]:
    """Distinct node ids, each advertised at its own service name; a principal for each made by
    the one-shot, whose token reaches the broker as a file of a read-only volume (never a literal
    in the environment)."""
    services = document["services"]
    brokers = kafka_brokers(document)
    maker = services.get(BROKER_PRINCIPALS)
    if maker is None:
        return [f"no {BROKER_PRINCIPALS} service"]
    made = environment_of(maker).get("KAFKA_BROKER_NODE_IDS", "").split()
    words = " ".join(command_words(maker))
    problems = []
    if "create_principal" not in words or "--broker" not in words:
        problems.append(f"{BROKER_PRINCIPALS} does not run create_principal --broker")
    if maker.get("restart", "no") != "no":
        problems.append(f"{BROKER_PRINCIPALS} is a one-shot: restart 'no'")
    maker_volumes = {m["source"] for m in mounts_of(maker) if m.get("type") == "volume"}
    node_ids: list[str] = []
    for name, s in brokers.items():
        env = broker_env(s)
        node_id = env.get("BROKER_NODE_ID", "")
        if not node_id.isdigit():
            problems.append(f"{name}: BROKER_NODE_ID {node_id!r} is not a node id")
        node_ids.append(node_id)
        if env.get("BROKER_HOST") != name:
            problems.append(f"{name}: advertised as {env.get('BROKER_HOST')}, not {name}")
        raw_token = str(environment_of(s).get("BROKER_TOKEN", "") or "")
        if raw_token and not re.fullmatch(r"\$\{\w+(:?-)?\}", raw_token):
            problems.append(f"{name}: BROKER_TOKEN is a literal")
        token_file = env.get("BROKER_TOKEN_FILE", "")
        if Path(token_file).name != f"kafka-broker-{node_id}.token":
            problems.append(f"{name}: BROKER_TOKEN_FILE {token_file!r} is not its token")
        shared = [
            m
            for m in mounts_of(s)
            if m.get("type") == "volume"
            and m["source"] in maker_volumes
            and str(Path(token_file).parent) == m["target"]
        ]
        if not shared or not all(m.get("read_only") for m in shared):
            problems.append(f"{name}: its token file is not on {BROKER_PRINCIPALS}'s volume (ro)")
        if depends_on_of(s).get(BROKER_PRINCIPALS) != "service_completed_successfully":
            problems.append(f"{name} does not wait for {BROKER_PRINCIPALS}")
    if len(set(node_ids)) != len(node_ids):
        problems.append(f"node ids are not distinct: {node_ids}")
    if sorted(made) != sorted(node_ids):
        problems.append(f"{BROKER_PRINCIPALS} makes principals for {made}, brokers are {node_ids}")
    return problems


TOKEN_KEY_VARIABLE = "CP_DELEGATION_TOKEN_SECRET_KEY"
BROKER_TOKEN_KEY = "BROKER_DELEGATION_TOKEN_SECRET_KEY"


def check_token_key_from_the_host(document: dict[str, Any]) -> list[str]:
    """The delegation-token key comes from the host's environment (never a literal here) to
    every process of the control plane and, as their static config, to every Kafka broker."""
    shared = document.get(APP_ENV_ANCHOR, {})
    value = str(shared.get(TOKEN_KEY_VARIABLE, ""))
    if not re.fullmatch(rf"\$\{{{TOKEN_KEY_VARIABLE}(:?[-?][^}}]*)?\}}", value):
        return [f"{APP_ENV_ANCHOR}: {TOKEN_KEY_VARIABLE} is not ${{{TOKEN_KEY_VARIABLE}...}}"]
    return [
        f"{name}: {BROKER_TOKEN_KEY} is not the control plane's {TOKEN_KEY_VARIABLE}"
        for name, s in kafka_brokers(document).items()
        if str(environment_of(s).get(BROKER_TOKEN_KEY, "")) != value
    ]


def check_kafka_broker_entrypoint(
    document: dict[str, Any], compose_dir: Path = DOCKER_DIR
) -> list[str]:
    """The entrypoint runs the script at the path a read-only bind mount puts
    scripts/kafka/broker-entrypoint.sh."""
    problems = []
    for name, s in kafka_brokers(document).items():
        entrypoint = s.get("entrypoint", [])
        words = entrypoint.split() if isinstance(entrypoint, str) else [str(w) for w in entrypoint]
        scripts = [w for w in words if w.endswith(".sh")]
        if len(scripts) != 1:
            problems.append(f"{name}: entrypoint {words} runs no script")
            continue
        mounted = [m for m in mounts_of(s) if m["target"] == scripts[0]]
        if len(mounted) != 1 or mounted[0].get("type") != "bind":
            problems.append(f"{name}: nothing is bind-mounted at {scripts[0]}")
            continue
        if (compose_dir / mounted[0]["source"]).resolve() != BROKER_ENTRYPOINT:
            problems.append(f"{name}: {mounted[0]['source']} is not {BROKER_ENTRYPOINT}")
        if not mounted[0].get("read_only"):
            problems.append(f"{name}: the entrypoint is not mounted read-only")
    if not BROKER_ENTRYPOINT.is_file():
        problems.append(f"{BROKER_ENTRYPOINT} does not exist")
    return problems


def check_broker_entrypoint_text(text: str) -> list[str]:
    """Kafka's own scripts at the image's paths; storage formatted once, with the cluster id as
    `--cluster-id=` (an id may start with "-"); Kafka exec'd (it gets the signals); the token
    never traced or echoed."""
    problems = []
    if not text.startswith("#!/usr/bin/env bash\n"):
        problems.append("not a bash script")
    if "set -euo pipefail" not in text:
        problems.append("no `set -euo pipefail`")
    if not re.search(r"^KAFKA_HOME=\$\{KAFKA_HOME:-/opt/kafka\}$", text, re.MULTILINE):
        problems.append("KAFKA_HOME is not the image's /opt/kafka")
    if not re.search(r'^\s*exec "\$KAFKA_HOME/bin/kafka-server-start\.sh" ', text, re.MULTILINE):
        problems.append("does not exec Kafka's kafka-server-start.sh")
    joined = re.sub(r"\\\n\s*", " ", text)  # continuation lines joined
    formats = re.findall(r'"\$KAFKA_HOME/bin/kafka-storage\.sh" format[^\n]*', joined)
    if len(formats) != 1 or "--ignore-formatted" not in formats[0]:
        problems.append("does not format with kafka-storage.sh ... --ignore-formatted")
    elif '"--cluster-id=$' not in formats[0]:
        problems.append("the cluster id is not given as --cluster-id=ID")
    if re.search(r"^\s*set -[a-z]*x", text, re.MULTILINE):
        problems.append("traces commands (set -x would print the token)")
    for line in text.splitlines():
        if re.search(r"\b(echo|log|die)\b.*\$\{?TOKEN", line):
            problems.append(f"prints the token: {line.strip()}")
    return problems


def check_host_ports_unique(document: dict[str, Any]) -> list[str]:
    seen: dict[str, str] = {}
    problems = []
    for name, s in document["services"].items():
        for port in s.get("ports", []):
            host = port.split("/")[0].split(":")[-2]  # [ip:]host:container[/proto]
            if host in seen:
                problems.append(f"host port {host} of {name} already used by {seen[host]}")
            seen[host] = name
    return problems


def check_named_volumes_declared(document: dict[str, Any]) -> list[str]:
    declared = set(document.get("volumes") or {})
    problems = []
    for name, s in document["services"].items():
        for volume in s.get("volumes", []):
            if isinstance(volume, dict):
                source = volume.get("source") if volume.get("type") == "volume" else None
            else:
                source = volume.split(":", 1)[0] if ":" in volume else None
                if source and source.startswith(("/", ".", "~", "$")):
                    source = None
            if source and source not in declared:
                problems.append(f"{name} mounts undeclared volume {source}")
    return problems


def check_build_context(document: dict[str, Any], compose_dir: Path = DOCKER_DIR) -> list[str]:
    problems = []
    builds = [(name, build_of(s)) for name, s in document["services"].items() if "build" in s]
    if not builds:
        return ["no service builds the project's image"]
    for name, (context, dockerfile) in builds:
        root = (compose_dir / context).resolve()
        if root != REPO_ROOT or not (root / "pyproject.toml").is_file():
            problems.append(f"{name}: context {context} is not the repository root")
        if not (root / dockerfile).is_file():
            problems.append(f"{name}: Dockerfile {root / dockerfile} does not exist")
    return problems


def check_dockerfile(text: str) -> list[str]:
    instructions = dockerfile_instructions(text)
    problems = []
    froms = [args for keyword, args in instructions if keyword == "FROM"]
    if not froms or not froms[-1].startswith("python:3.11-slim"):
        problems.append("the final stage must be FROM python:3.11-slim")
    users = [args for keyword, args in instructions if keyword == "USER"]
    if not users or users[-1].split(":")[0] in {"root", "0"}:
        problems.append("the image must end with a non-root USER")
    runs = [args for keyword, args in instructions if keyword == "RUN"]
    if any(re.search(r"playwright\s+install", run) for run in runs):
        problems.append("the image must not run `playwright install`")
    if not any(re.search(r"pip install\b[^&;]*\s\.(\s|$)", run) for run in runs):
        problems.append("the image must `pip install .` the project")
    if not any("openjdk-17-jre-headless" in run for run in runs):
        problems.append("the image must install Java 17 (PySpark needs it)")
    env = " ".join(args for keyword, args in instructions if keyword == "ENV")
    for variable in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"):
        if variable not in env:
            problems.append(f"ENV {variable} missing")
    return problems


SEMANTIC_CHECKS: list[Callable[[dict[str, Any]], list[str]]] = [
    check_depends_on_targets_exist,
    check_healthy_dependencies_have_healthchecks,
    check_completed_dependencies_are_one_shot,
    check_app_services_share_environment,
    check_app_services_wait_for_backing_services,
    check_two_controllers,
    check_gunicorn_without_control_socket,
    check_listeners_run_the_control_planes_worker,
    check_listeners_are_separate,
    check_kafka_listener,
    check_kafka_controller_listener,
    check_default_services_need_no_profile,
    check_kafka_brokers_run_stock_kafka,
    check_kafka_brokers_follow_the_controller,
    check_kafka_broker_identities,
    check_kafka_broker_entrypoint,
    check_token_key_from_the_host,
    check_host_ports_unique,
    check_named_volumes_declared,
    check_build_context,
]


# --- the real files -----------------------------------------------------------------------


def test_compose_file_matches_schema(compose: dict[str, Any]) -> None:
    assert schema_errors(compose) == []


def test_schema_itself_is_valid() -> None:
    jsonschema.Draft202012Validator.check_schema(COMPOSE_SCHEMA)


@pytest.mark.parametrize("check", SEMANTIC_CHECKS, ids=lambda c: c.__name__)
def test_compose_semantics(compose: dict[str, Any], check: Callable[..., list[str]]) -> None:
    assert check(compose) == []


def test_expected_services_are_defined(compose: dict[str, Any]) -> None:
    expected = {
        "postgres",
        "redis",
        "migrate",
        "web",
        "internal",
        "kafka",
        "worker",
        "beat",
        "spark-master",
        "spark-worker",
        "kafka-controller",
        BROKER_PRINCIPALS,
        "kafka-broker-1",
        "kafka-broker-2",
        "kafka-broker-3",
    }
    assert expected <= set(compose["services"])
    assert any("run_controller" in command_words(s) for s in compose["services"].values())


SPARK = ("spark-master", "spark-worker")


def test_spark_only_starts_with_the_audit_profile(compose: dict[str, Any]) -> None:
    assert all(compose["services"][name].get("profiles") == ["audit"] for name in SPARK)


def test_only_spark_and_kafka_are_behind_profiles(compose: dict[str, Any]) -> None:
    """`up` without a profile starts what it always did: Spark is `audit`; the brokers, their
    controller listener and the one-shot that makes their principals are `kafka`."""
    profiled = {n: s["profiles"] for n, s in compose["services"].items() if s.get("profiles")}
    kafka = {n for n, profiles in profiled.items() if profiles == [KAFKA_PROFILE]}
    assert set(profiled) == set(SPARK) | kafka
    assert kafka == {"kafka-controller", BROKER_PRINCIPALS, *kafka_brokers(compose)}
    assert len(kafka_brokers(compose)) == 3


def test_the_spark_cluster_reads_the_export_where_it_is_written(compose: dict[str, Any]) -> None:
    """Reports run on the cluster with the same paths as the export: the worker mounts the
    export's volume where the application writes it, and its image is the PySpark version."""
    services = compose["services"]
    export_path = compose["x-app-env"]["CP_AUDIT_EXPORT_PATH"]
    mounts = [v.split(":") for v in services["spark-worker"]["volumes"]]
    assert any(export_path.startswith(target) for _, target, *_ in mounts)
    writers = [
        n for n in ("web", "worker", "beat") if "audit:/data" in services[n].get("volumes", [])
    ]
    assert writers == ["web", "worker", "beat"]
    pinned = next(
        d for d in load_pyproject()["project"]["dependencies"] if d.startswith("pyspark==")
    )
    version = pinned.split("==")[1]
    assert all(services[name]["image"] == f"apache/spark:{version}" for name in SPARK)
    master = services["spark-worker"]["command"]
    assert "spark://spark-master:7077" in master


def test_dockerfile() -> None:
    (context, dockerfile), *_ = [
        build_of(s) for s in load_compose()["services"].values() if "build" in s
    ]
    text = (DOCKER_DIR / context / dockerfile).read_text()
    assert check_dockerfile(text) == []


# --- broken copies: every check must be able to fail --------------------------------------


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    *parents, last = path.split("/")

    def mutate(document: dict[str, Any]) -> None:
        node = document
        for key in parents:
            node = node[key]
        node[last] = value

    return mutate


def _delete(path: str) -> Callable[[dict[str, Any]], None]:
    *parents, last = path.split("/")

    def mutate(document: dict[str, Any]) -> None:
        node = document
        for key in parents:
            node = node[key]
        del node[last]

    return mutate


def _strip_build_and_image(document: dict[str, Any]) -> None:
    document["services"]["worker"].pop("build")
    document["services"]["worker"].pop("image")


SCHEMA_BREAKAGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "no services": _delete("services"),
    "unknown top-level key": _set("servics", {}),
    "service without image or build": _strip_build_and_image,
    "command is a number": _set("services/worker/command", 42),
    "depends_on condition unknown": _set(
        "services/web/depends_on/postgres", {"condition": "service_ready"}
    ),
    "depends_on long form without condition": _set("services/web/depends_on/postgres", {}),
    "depends_on is a string": _set("services/web/depends_on", "postgres"),
    "healthcheck test is a number": _set("services/redis/healthcheck/test", 1),
    "healthcheck test list with bad prefix": _set("services/redis/healthcheck/test", ["RUN", "x"]),
    "port is an integer (unquoted 8000:8000 in YAML 1.1)": _set("services/web/ports", [480000]),
    "port without host side": _set("services/web/ports", ["8000"]),
    "restart is the boolean false (unquoted no)": _set("services/migrate/restart", False),
    "restart not in enum": _set("services/worker/restart", "sometimes"),
    "replicas is a string": _set("services/controller/deploy/replicas", "2"),
    "environment is a string": _set("services/worker/environment", "DATABASE_URL=x"),
    "environment value is a mapping": _set("services/worker/environment/DATABASE_URL", {"a": 1}),
    "profiles is a string": _set("services/spark-master/profiles", "audit"),
    "misspelt service key": _set("services/worker/depend_on", ["postgres"]),
    "volumes is a list": _set("volumes", ["pgdata"]),
}


@pytest.mark.parametrize("mutate", SCHEMA_BREAKAGES.values(), ids=SCHEMA_BREAKAGES.keys())
def test_schema_rejects_broken_copy(
    compose: dict[str, Any], mutate: Callable[[dict[str, Any]], None]
) -> None:
    broken = copy.deepcopy(compose)
    mutate(broken)
    assert schema_errors(broken) != []


def _rename_web_dependency(document: dict[str, Any]) -> None:
    deps = document["services"]["web"]["depends_on"]
    deps["postgresql"] = deps.pop("postgres")


def _drop_controller_replica(document: dict[str, Any]) -> None:
    document["services"]["controller"]["deploy"]["replicas"] = 1


def _controller_restarts_unless_stopped(document: dict[str, Any]) -> None:
    document["services"]["controller"]["restart"] = "unless-stopped"


def _drop_no_control_socket(document: dict[str, Any]) -> None:
    document["services"]["internal"]["command"].remove("--no-control-socket")


def _change_worker_env(document: dict[str, Any]) -> None:
    document["services"]["worker"]["environment"]["CELERY_BROKER_URL"] = "redis://localhost:6379/0"


def _hardcode_secret(document: dict[str, Any]) -> None:
    document[APP_ENV_ANCHOR]["CP_SECRET_KEY"] = "hunter2"


def _beat_without_env(document: dict[str, Any]) -> None:
    del document["services"]["beat"]["environment"]


def _migrate_restarts(document: dict[str, Any]) -> None:
    document["services"]["migrate"]["restart"] = "unless-stopped"


def _gthread_worker(document: dict[str, Any]) -> None:
    command = document["services"]["internal"]["command"]
    command[command.index("--worker-class") + 1] = "gthread"


def _worker_skips_migrate(document: dict[str, Any]) -> None:
    del document["services"]["worker"]["depends_on"]["migrate"]


def _build_from_docker_dir(document: dict[str, Any]) -> None:
    document["services"]["web"]["build"] = {"context": ".", "dockerfile": "Dockerfile"}


def _missing_dockerfile(document: dict[str, Any]) -> None:
    document["services"]["web"]["build"]["dockerfile"] = "docker/Containerfile"


def _undeclared_volume(document: dict[str, Any]) -> None:
    document["services"]["redis"]["volumes"] = ["redis-data:/data"]


def _controller_listener_plaintext(document: dict[str, Any]) -> None:
    command = document["services"]["kafka-controller"]["command"]
    command[command.index("CONTROLLER:SASL_PLAINTEXT")] = "CONTROLLER:PLAINTEXT"


def _controller_advertises_localhost(document: dict[str, Any]) -> None:
    command = document["services"]["kafka-controller"]["command"]
    command[command.index("--advertised-host") + 1] = "localhost"


def _controller_listener_moves(document: dict[str, Any]) -> None:
    command = document["services"]["kafka-controller"]["command"]
    command[command.index("CONTROLLER://0.0.0.0:9094")] = "CONTROLLER://0.0.0.0:9095"


def _controller_listener_on_the_client_service(document: dict[str, Any]) -> None:
    document["services"]["kafka"]["command"] += ["--listener", "CONTROLLER://0.0.0.0:9095"]


def _unpublish_client_listener(document: dict[str, Any]) -> None:
    document["services"]["kafka"]["ports"].remove("9093:9093")


def _web_waits_for_a_broker(document: dict[str, Any]) -> None:
    document["services"]["web"]["depends_on"]["kafka-broker-1"] = {"condition": "service_started"}


def _broker_env(name: str, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return _set(f"services/{name}/environment/{key}", value)


def _same_node_id_twice(document: dict[str, Any]) -> None:
    document["services"]["kafka-broker-2"]["environment"]["BROKER_NODE_ID"] = "1"
    document["services"]["kafka-broker-2"]["environment"]["BROKER_TOKEN_FILE"] = (
        "/etc/kafka/secrets/kafka-broker-1.token"
    )


def _tokens_mounted_writable(document: dict[str, Any]) -> None:
    for mount in document["services"]["kafka-broker-1"]["volumes"]:
        if isinstance(mount, dict):
            mount["read_only"] = False


def _entrypoint_mounted_elsewhere(document: dict[str, Any]) -> None:
    volumes = document["services"]["kafka-broker-3"]["volumes"]
    volumes[0] = volumes[0].replace("/opt/controlplane/", "/opt/kafka/")


def _entrypoint_from_another_script(document: dict[str, Any]) -> None:
    volumes = document["services"]["kafka-broker-1"]["volumes"]
    volumes[0] = volumes[0].replace("kafka/broker-entrypoint.sh:", "kafka/entrypoint.sh:")


def _entrypoint_mounted_writable(document: dict[str, Any]) -> None:
    volumes = document["services"]["kafka-broker-2"]["volumes"]
    volumes[0] = volumes[0].removesuffix(":ro")


def _broker_skips_principals(document: dict[str, Any]) -> None:
    del document["services"]["kafka-broker-2"]["depends_on"][BROKER_PRINCIPALS]


SEMANTIC_BREAKAGES: list[tuple[Callable[..., list[str]], Callable[[dict[str, Any]], None]]] = [
    (check_depends_on_targets_exist, _rename_web_dependency),
    (check_healthy_dependencies_have_healthchecks, _delete("services/postgres/healthcheck")),
    (
        check_healthy_dependencies_have_healthchecks,
        _set("services/redis/healthcheck/disable", True),
    ),
    (check_completed_dependencies_are_one_shot, _migrate_restarts),
    (check_app_services_share_environment, _change_worker_env),
    (check_app_services_share_environment, _hardcode_secret),
    (check_app_services_share_environment, _beat_without_env),
    (check_app_services_share_environment, _delete(f"{APP_ENV_ANCHOR}/DATABASE_URL")),
    (check_app_services_wait_for_backing_services, _worker_skips_migrate),
    (check_two_controllers, _drop_controller_replica),
    (check_two_controllers, _controller_restarts_unless_stopped),
    (check_gunicorn_without_control_socket, _drop_no_control_socket),
    (check_gunicorn_without_control_socket, _set("services/web/command", "gunicorn x:app")),
    (check_listeners_run_the_control_planes_worker, _gthread_worker),
    (check_listeners_are_separate, _delete("services/internal/environment/CP_LISTENER")),
    (check_listeners_are_separate, _set("services/web/environment/CP_LISTENER", "internal")),
    (check_listeners_are_separate, _set("services/internal/environment/CP_LISTENER", "both")),
    (
        check_listeners_are_separate,
        _set("services/internal/healthcheck/test", ["CMD", "curl", "-f", "http://x:8001/ui/"]),
    ),
    (check_host_ports_unique, _set("services/internal/ports", ["8000:8001"])),
    (check_named_volumes_declared, _undeclared_volume),
    (check_build_context, _build_from_docker_dir),
    (check_build_context, _missing_dockerfile),
    (check_kafka_listener, _unpublish_client_listener),
    (
        check_kafka_listener,
        _delete("services/kafka-controller/environment/PROMETHEUS_MULTIPROC_DIR"),
    ),
    (check_kafka_controller_listener, _controller_listener_plaintext),
    (check_kafka_controller_listener, _controller_advertises_localhost),
    (check_kafka_controller_listener, _controller_listener_on_the_client_service),
    (check_default_services_need_no_profile, _web_waits_for_a_broker),
    (
        check_default_services_need_no_profile,
        _set(
            f"services/{BROKER_PRINCIPALS}/depends_on/spark-master",
            {"condition": "service_started"},
        ),
    ),
    (
        check_kafka_brokers_run_stock_kafka,
        _set("services/kafka-broker-2/image", "apache/kafka:4.0.0"),
    ),
    (check_kafka_brokers_run_stock_kafka, _set("services/kafka-broker-1/profiles", ["brokers"])),
    (check_kafka_brokers_run_stock_kafka, _broker_env("kafka-broker-3", "KAFKA_HEAP_OPTS", "")),
    (check_kafka_brokers_run_stock_kafka, _delete("services/kafka-broker-1/healthcheck")),
    (check_kafka_brokers_follow_the_controller, _controller_listener_moves),
    (
        check_kafka_brokers_follow_the_controller,
        _broker_env("kafka-broker-1", "CONTROLLER_ADDRESS", "kafka:9094"),
    ),
    (
        check_kafka_brokers_follow_the_controller,
        _broker_env("kafka-broker-2", "CONTROLLER_ID", "1"),
    ),
    (
        check_kafka_brokers_follow_the_controller,
        _set(f"{APP_ENV_ANCHOR}/CP_CONTROLLER_ID", "${CP_CONTROLLER_ID:-3001}"),
    ),
    (
        check_kafka_brokers_follow_the_controller,
        _broker_env("kafka-broker-3", "CONTROLPLANE_INTERNAL_URL", "http://web:8000"),
    ),
    (
        check_kafka_brokers_follow_the_controller,
        _set(f"{APP_ENV_ANCHOR}/CP_ALLOWED_HOSTS", "localhost,127.0.0.1,web"),
    ),
    (
        check_kafka_brokers_follow_the_controller,
        _delete("services/kafka-broker-1/depends_on/kafka-controller"),
    ),
    (check_kafka_broker_identities, _same_node_id_twice),
    (check_kafka_broker_identities, _broker_env("kafka-broker-3", "BROKER_NODE_ID", "three")),
    (check_kafka_broker_identities, _broker_env("kafka-broker-1", "BROKER_HOST", "localhost")),
    (check_kafka_broker_identities, _broker_env("kafka-broker-2", "BROKER_TOKEN", "s3cr3t")),
    (
        check_kafka_broker_identities,
        _broker_env("kafka-broker-2", "BROKER_TOKEN_FILE", "/tmp/kafka-broker-2.token"),
    ),
    (check_kafka_broker_identities, _tokens_mounted_writable),
    (
        check_kafka_broker_identities,
        _set(f"services/{BROKER_PRINCIPALS}/environment/KAFKA_BROKER_NODE_IDS", "1 2"),
    ),
    (check_kafka_broker_identities, _set(f"services/{BROKER_PRINCIPALS}/command", ["true"])),
    (check_kafka_broker_identities, _broker_skips_principals),
    (check_kafka_broker_entrypoint, _entrypoint_mounted_elsewhere),
    (check_kafka_broker_entrypoint, _entrypoint_from_another_script),
    (check_kafka_broker_entrypoint, _entrypoint_mounted_writable),
    (check_kafka_broker_entrypoint, _set("services/kafka-broker-2/entrypoint", ["bash"])),
    (check_token_key_from_the_host, _set(f"{APP_ENV_ANCHOR}/{TOKEN_KEY_VARIABLE}", "k3y-literal")),
    (check_token_key_from_the_host, _broker_env("kafka-broker-3", BROKER_TOKEN_KEY, "")),
]


@pytest.mark.parametrize(
    ("check", "mutate"),
    SEMANTIC_BREAKAGES,
    ids=[f"{c.__name__}-{getattr(m, '__name__', 'edit')}" for c, m in SEMANTIC_BREAKAGES],
)
def test_semantic_check_catches_broken_copy(
    compose: dict[str, Any],
    check: Callable[..., list[str]],
    mutate: Callable[[dict[str, Any]], None],
) -> None:
    broken = copy.deepcopy(compose)
    mutate(broken)
    assert check(broken) != []


DOCKERFILE_BREAKAGES: dict[str, Callable[[str], str]] = {
    "no USER": lambda t: re.sub(r"(?m)^USER .*$", "", t),
    "USER root last": lambda t: t + "\nUSER root\n",
    "USER 0:0 last": lambda t: t + "\nUSER 0:0\n",
    "playwright install": lambda t: t + "\nRUN pip install playwright \\\n && playwright install\n",
    "other base image": lambda t: t.replace("FROM python:3.11-slim", "FROM python:3.12"),
    "no pip install .": lambda t: t.replace("pip install .", "pip install -r requirements.txt"),
    "no PYTHONUNBUFFERED": lambda t: t.replace("PYTHONUNBUFFERED", "PYTHONBUFFERED"),
}


@pytest.mark.parametrize("mutate", DOCKERFILE_BREAKAGES.values(), ids=DOCKERFILE_BREAKAGES.keys())
def test_dockerfile_check_catches_broken_copy(mutate: Callable[[str], str]) -> None:
    text = (DOCKER_DIR / "Dockerfile").read_text()
    broken = mutate(text)
    assert broken != text
    assert check_dockerfile(broken) != []


# --- the brokers' entrypoint script, run with fake inputs ----------------------------------

FAKE_TOKEN = "fake-token-Zx9_q"  # never a real one; the script must not print it
FAKE_CLUSTER_ID = "-aBcDeFgHiJkLmNoPqRsTu"  # starts with "-", as one base64 id in 64 does


def test_broker_entrypoint_is_valid_bash() -> None:
    done = subprocess.run(
        ["bash", "-n", str(BROKER_ENTRYPOINT)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_broker_entrypoint_text() -> None:
    assert check_broker_entrypoint_text(BROKER_ENTRYPOINT.read_text()) == []


ENTRYPOINT_BREAKAGES: dict[str, Callable[[str], str]] = {
    "sh, not bash": lambda t: t.replace("#!/usr/bin/env bash", "#!/bin/sh", 1),
    "no pipefail": lambda t: t.replace("set -euo pipefail", "set -eu"),
    "another KAFKA_HOME": lambda t: t.replace("KAFKA_HOME:-/opt/kafka}", "KAFKA_HOME:-/kafka}"),
    "runs Kafka without exec": lambda t: t.replace(
        'exec "$KAFKA_HOME/bin/kafka-server-start.sh"', '"$KAFKA_HOME/bin/kafka-server-start.sh"'
    ),
    "formats every start afresh": lambda t: t.replace(" \\\n    --ignore-formatted", ""),
    "cluster id as a separate argument": lambda t: t.replace(
        '"--cluster-id=$cluster"', '--cluster-id "$cluster"'
    ),
    "traces": lambda t: t.replace("set -euo pipefail", "set -euxo pipefail"),
    "echoes the token": lambda t: t.replace(
        "  TOKEN=${TOKEN//", '  log "token: $TOKEN"\n  TOKEN=${TOKEN//', 1
    ),
}


@pytest.mark.parametrize("mutate", ENTRYPOINT_BREAKAGES.values(), ids=ENTRYPOINT_BREAKAGES.keys())
def test_entrypoint_check_catches_broken_copy(mutate: Callable[[str], str]) -> None:
    text = BROKER_ENTRYPOINT.read_text()
    broken = mutate(text)
    assert broken != text
    assert check_broker_entrypoint_text(broken) != []


def run_entrypoint(
    *args: str, env: dict[str, str], timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", str(BROKER_ENTRYPOINT), *args],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert FAKE_TOKEN not in done.stdout + done.stderr, "the entrypoint printed the token"
    return done


def read_properties(path: Path) -> dict[str, str]:
    """key=value lines (what the entrypoint and devtools write: no continuation lines)."""
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def compose_broker_env(compose: dict[str, Any], name: str, tmp_path: Path) -> dict[str, str]:
    """A compose broker's environment, interpolated with nothing set on the host, with its token
    file and log dir moved under tmp_path."""
    env = broker_env(compose["services"][name])
    token_file = tmp_path / Path(env["BROKER_TOKEN_FILE"]).name
    token_file.write_text(FAKE_TOKEN + "\n")
    return {**env, "BROKER_TOKEN_FILE": str(token_file), "BROKER_LOG_DIRS": str(tmp_path / "data")}


@pytest.mark.parametrize("name", ["kafka-broker-1", "kafka-broker-2", "kafka-broker-3"])
def test_broker_properties_are_the_tests_brokers(
    compose: dict[str, Any], name: str, tmp_path: Path
) -> None:
    """The server.properties a compose broker writes is what stock_kafka/broker_config.py
    gives the tests' brokers for the same inputs (a broker-only node, its voter the controller
    listener, SASL/PLAIN as its principal, the test kit's light settings), bound to every
    address and with an EXTERNAL listener besides; the controller listener's protocol is the
    one serve_kafka serves it with."""
    from stock_kafka.broker_config import broker_properties

    env = compose_broker_env(compose, name, tmp_path)
    written = tmp_path / "server.properties"
    done = run_entrypoint("--write-properties", str(written), env=env)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(written.stat().st_mode) == 0o600  # it holds the token
    got = read_properties(written)
    node_id = int(env["BROKER_NODE_ID"])
    expected = broker_properties(
        node_id=node_id,
        controller=env["CONTROLLER_ADDRESS"],
        principal=f"kafka-broker-{node_id}",
        token=FAKE_TOKEN,
        data_dirs=[tmp_path / "data"],
        port=9092,
        host=name,
        controller_id=int(env["CONTROLLER_ID"]),
    )
    external = f"EXTERNAL://localhost:{env['BROKER_EXTERNAL_PORT']}"
    assert (
        got["listeners"]
        == f"PLAINTEXT://0.0.0.0:9092,EXTERNAL://0.0.0.0:{env['BROKER_EXTERNAL_PORT']}"
    )
    assert got["advertised.listeners"] == f"{expected['advertised.listeners']},{external}"
    assert got["listener.security.protocol.map"] == (
        f"{expected['listener.security.protocol.map']},EXTERNAL:PLAINTEXT"
    )
    mine = {"listeners", "advertised.listeners", "listener.security.protocol.map"}
    assert {k: v for k, v in got.items() if k not in mine} == {
        k: v for k, v in expected.items() if k not in mine
    }
    # The keys that make it follow this controller, against compose.yaml itself.
    service, listener = controller_listener(compose) or ("", None)
    protocols = dict(p.split(":") for p in got["listener.security.protocol.map"].split(","))
    assert protocols[got["controller.listener.names"]] == listener.protocol
    controller_id = interpolated(compose[APP_ENV_ANCHOR]["CP_CONTROLLER_ID"])
    assert got["controller.quorum.voters"] == f"{controller_id}@{service}:{listener.port}"
    assert got["process.roles"] == "broker"
    assert got["sasl.mechanism.controller.protocol"] == "PLAIN"


def test_broker_properties_quote_the_jaas_line_as_devtools_does(tmp_path: Path) -> None:
    from stock_kafka.broker_config import jaas_plain

    token = FAKE_TOKEN + '"\\x'
    (tmp_path / "token").write_text(token)
    env = {
        "BROKER_NODE_ID": "7",
        "BROKER_PRINCIPAL": 'odd"name',
        "BROKER_TOKEN_FILE": str(tmp_path / "token"),
        "CONTROLLER_ADDRESS": "controller:9094",
        "BROKER_HOST": "b7",
    }
    done = run_entrypoint("--write-properties", str(tmp_path / "p"), env=env)
    assert done.returncode == 0, done.stderr
    line = next(
        line
        for line in (tmp_path / "p").read_text().splitlines()
        if line.startswith("listener.name.controller.plain.sasl.jaas.config=")
    )
    value = line.split("=", 1)[1].replace("\\\\", "\\")  # Java properties unescaping
    assert value == jaas_plain('odd"name', token)
    assert "controller.quorum.voters=3000@controller:9094" in (tmp_path / "p").read_text()


def test_a_broker_takes_the_token_key_as_its_static_config(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    """The control plane's delegation-token key, from a file or the environment, stripped as
    the control plane strips it, becomes the broker's delegation.token.secret.key, never
    printed; none given: no such property (tokens disabled on the broker too)."""
    env = compose_broker_env(compose, "kafka-broker-1", tmp_path)
    written = tmp_path / "server.properties"
    assert run_entrypoint("--write-properties", str(written), env=env).returncode == 0
    assert "delegation.token.secret.key" not in read_properties(written)
    key_file = tmp_path / "token-key"
    key_file.write_text("  a key with inner spaces\n")
    keyed = {**env, f"{BROKER_TOKEN_KEY}_FILE": str(key_file)}
    done = run_entrypoint("--write-properties", str(written), env=keyed)
    assert done.returncode == 0, done.stderr
    assert "inner spaces" not in done.stdout + done.stderr
    assert read_properties(written)["delegation.token.secret.key"] == "a key with inner spaces"
    from_env = {**env, BROKER_TOKEN_KEY: "from-the-environment"}
    assert run_entrypoint("--write-properties", str(written), env=from_env).returncode == 0
    assert read_properties(written)["delegation.token.secret.key"] == "from-the-environment"
    missing = {**env, f"{BROKER_TOKEN_KEY}_FILE": str(tmp_path / "nothing")}
    refused = run_entrypoint("--write-properties", str(tmp_path / "p"), env=missing)
    assert refused.returncode == 1 and "cannot read" in refused.stderr


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("BROKER_NODE_ID", "BROKER_NODE_ID is not set"),
        ("CONTROLLER_ADDRESS", "CONTROLLER_ADDRESS is not set"),
        ("BROKER_TOKEN_FILE", "no token"),
    ],
)
def test_broker_entrypoint_refuses_missing_inputs(
    compose: dict[str, Any], tmp_path: Path, missing: str, message: str
) -> None:
    env = compose_broker_env(compose, "kafka-broker-1", tmp_path)
    del env[missing]
    done = run_entrypoint("--write-properties", str(tmp_path / "p"), env=env)
    assert done.returncode == 1
    assert message in done.stderr
    assert not (tmp_path / "p").exists()


class StubInternalListener(http.server.BaseHTTPRequestHandler):
    """GET /internal/v1/metadata as the control plane's internal listener answers it: each
    request takes the next (status, body) of `answers` (the last one repeats)."""

    answers: list[tuple[int, dict[str, Any]]] = []
    seen: list[tuple[str, str | None]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization")))
        status, body = self.answers[min(len(self.seen), len(self.answers)) - 1]
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def internal_listener() -> Iterator[tuple[str, type[StubInternalListener]]]:
    handler = type("Handler", (StubInternalListener,), {"answers": [], "seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


METADATA = {"cluster_id": FAKE_CLUSTER_ID, "controller_id": 3000, "last_offset": 5, "records": []}


def test_broker_reads_the_cluster_id_with_its_own_token(
    compose: dict[str, Any], tmp_path: Path, internal_listener: tuple[str, Any]
) -> None:
    """It waits while the control plane is not there (503) or refuses the token (401), then
    reads the cluster id from the brokers' metadata fetch, which a broker principal's
    CLUSTER_ACTION may call (GET /api/v1/cluster wants DESCRIBE, which brokers lack)."""
    url, handler = internal_listener
    handler.answers = [(503, {}), (401, {"error_code": 58}), (200, METADATA)]
    env = {
        **compose_broker_env(compose, "kafka-broker-2", tmp_path),
        "CONTROLPLANE_INTERNAL_URL": url,
        "BROKER_WAIT_INTERVAL_S": "0.05",
    }
    done = run_entrypoint("--print-cluster-id", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == FAKE_CLUSTER_ID + "\n"
    assert len(handler.seen) == 3
    assert {auth for _, auth in handler.seen} == {f"Bearer {FAKE_TOKEN}"}
    path = urllib.parse.urlsplit(handler.seen[0][0])
    assert path.path == "/internal/v1/metadata"
    assert urllib.parse.parse_qs(path.query) == {"max_records": ["1"], "wait_ms": ["0"]}
    assert "refuses kafka-broker-2's token (HTTP 401)" in done.stderr


def test_broker_gives_up_waiting(
    compose: dict[str, Any], tmp_path: Path, internal_listener: tuple[str, Any]
) -> None:
    url, handler = internal_listener
    handler.answers = [(401, {"error_code": 58})]
    env = {
        **compose_broker_env(compose, "kafka-broker-1", tmp_path),
        "CONTROLPLANE_INTERNAL_URL": url,
        "BROKER_WAIT_S": "0",
    }
    done = run_entrypoint("--print-cluster-id", env=env)
    assert done.returncode == 1
    assert "gave up" in done.stderr and done.stdout == ""


def fake_kafka_home(tmp_path: Path) -> Path:
    """Kafka's two scripts the entrypoint runs, as stubs that record their arguments."""
    home = tmp_path / "kafka"
    (home / "bin").mkdir(parents=True)
    (home / "config").mkdir()
    for script in ("kafka-storage.sh", "kafka-server-start.sh"):
        path = home / "bin" / script
        path.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{home}/{script}.args"\n')
        path.chmod(0o755)
    return home


def test_broker_formats_once_and_execs_kafka(
    compose: dict[str, Any], tmp_path: Path, internal_listener: tuple[str, Any]
) -> None:
    url, handler = internal_listener
    handler.answers = [(200, METADATA)]
    home = fake_kafka_home(tmp_path)
    env = {
        **compose_broker_env(compose, "kafka-broker-3", tmp_path),
        "CONTROLPLANE_INTERNAL_URL": url,
        "KAFKA_HOME": str(home),
    }
    done = run_entrypoint(env=env)
    assert done.returncode == 0, done.stderr
    properties = home / "config" / "server.properties"
    assert stat.S_IMODE(properties.stat().st_mode) == 0o600
    assert read_properties(properties)["node.id"] == "3"
    formatted = (home / "kafka-storage.sh.args").read_text().splitlines()
    assert formatted == [
        "format",
        f"--cluster-id={FAKE_CLUSTER_ID}",
        "-c",
        str(properties),
        "--ignore-formatted",
    ]
    assert (home / "kafka-server-start.sh.args").read_text().splitlines() == [str(properties)]


def test_broker_refuses_a_log_dir_of_another_cluster(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    home = fake_kafka_home(tmp_path)
    env = {
        **compose_broker_env(compose, "kafka-broker-1", tmp_path),
        "CLUSTER_ID": FAKE_CLUSTER_ID,
        "KAFKA_HOME": str(home),
    }
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.properties").write_text("version=1\ncluster.id=OtherCluster\n")
    done = run_entrypoint(env=env)
    assert done.returncode == 1
    assert "belongs to cluster OtherCluster" in done.stderr
    assert not (home / "kafka-storage.sh.args").exists()
    assert not (home / "kafka-server-start.sh.args").exists()


def test_kafkas_own_storage_tool_formats_with_the_properties(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    """Kafka's StorageTool (the pinned jars) takes the properties the entrypoint writes: it
    validates them as the broker will (KafkaConfig) and formats the log dir for the cluster."""
    from stock_kafka import jars as kafka
    from tests.kafka.conftest import need_kafka_jars

    need_kafka_jars()  # skipped without them, failed under CP_REQUIRE_SERVICES=1
    env = compose_broker_env(compose, "kafka-broker-1", tmp_path)
    properties = tmp_path / "server.properties"
    assert run_entrypoint("--write-properties", str(properties), env=env).returncode == 0
    command = kafka.java_command(
        "kafka.tools.StorageTool",
        ["format", f"--cluster-id={FAKE_CLUSTER_ID}", "-c", str(properties), "--ignore-formatted"],
        heap="128m",
        log_dir=tmp_path,
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert FAKE_TOKEN not in done.stdout + done.stderr
    meta = read_properties(tmp_path / "data" / "meta.properties")
    assert meta["cluster.id"] == FAKE_CLUSTER_ID
    assert meta["node.id"] == "1"


def test_broker_principals_one_shot_writes_each_token_once(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    """The one-shot's shell command (sh, as the app image runs it), with a stub of `python
    manage.py create_principal`: one token file per node id, the last line create_principal
    prints, readable by the brokers' user; a second run keeps them; no token in its output."""
    maker = compose["services"][BROKER_PRINCIPALS]
    shell, flag, script = command_words_raw(maker)
    assert (shell, flag) == ("sh", "-c")
    mount = next(m["target"] for m in mounts_of(maker) if m["source"] == "kafka-broker-tokens")
    stub = tmp_path / "bin" / "python"
    stub.parent.mkdir()
    stub.write_text(
        '#!/bin/sh\n[ "$1 $2 $4" = "manage.py create_principal --broker" ] || exit 2\n'
        'echo "Principal User:$3 (broker). Its token (shown once):"\n'
        f'echo "{FAKE_TOKEN}-$3"\n'
    )
    stub.chmod(0o755)
    tokens = tmp_path / "tokens"
    tokens.mkdir()
    env = {
        "PATH": f"{stub.parent}:{os.environ['PATH']}",
        "KAFKA_BROKER_NODE_IDS": environment_of(maker)["KAFKA_BROKER_NODE_IDS"],
    }
    runnable = interpolated(script).replace(mount, str(tokens))
    for _ in range(2):
        done = subprocess.run(
            ["sh", "-c", runnable], env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        assert FAKE_TOKEN not in done.stdout + done.stderr
    assert "kafka-broker-3: its token is kept" in done.stdout
    for name, service in kafka_brokers(compose).items():
        token_file = tokens / Path(broker_env(service)["BROKER_TOKEN_FILE"]).name
        assert token_file.read_text() == f"{FAKE_TOKEN}-{name}\n"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o644
