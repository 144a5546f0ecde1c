"""docker/compose.yaml and docker/Dockerfile, checked by parsing (no Docker engine needed).

First a JSON schema (a focused subset of the Compose specification), then the semantics the
schema cannot express: dependencies exist and are healthchecked, the application services share
one environment, two controller replicas, gunicorn without its control socket and with the
control plane's worker (slow clients time out), a public and an internal listener each serving
its own URL conf, unique host ports, declared volumes, a build
context at the repository root, a non-root image.

Every check is a function that returns its problems; each is run once on the real files (no
problems) and once on a deliberately broken copy (the problem is found), so none can pass
vacuously. No test touches the database.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import tomllib
from collections.abc import Callable
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
    """The Kafka protocol listener is a service of its own running `serve_kafka` with at least
    one --listener PROTOCOL://HOST:PORT whose port is published, and its metrics directory (its
    counters join /metrics in multiprocess mode)."""
    from wire.server import Listener

    problems = []
    found = [s for s in document["services"].values() if "serve_kafka" in command_words(s)]
    if len(found) != 1:
        return [f"{len(found)} services run serve_kafka: want one"]
    (service,) = found
    words = [str(word) for word in command_words(service)]
    listeners = [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--listener"]
    if not listeners:
        problems.append("serve_kafka without --listener")
    published = {str(port).split(":")[-1] for port in service.get("ports", [])}
    for text in listeners:
        try:
            listener = Listener.parse(text)
        except ValueError as error:
            problems.append(str(error))
            continue
        if str(listener.port) not in published:
            problems.append(f"listener {text} is not published")
    if "PROMETHEUS_MULTIPROC_DIR" not in environment_of(service):
        problems.append("serve_kafka without PROMETHEUS_MULTIPROC_DIR")
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
    }
    assert expected <= set(compose["services"])
    assert any("run_controller" in command_words(s) for s in compose["services"].values())


SPARK = ("spark-master", "spark-worker")


def test_spark_only_starts_with_the_audit_profile(compose: dict[str, Any]) -> None:
    assert all(compose["services"][name].get("profiles") == ["audit"] for name in SPARK)
    default = [n for n, s in compose["services"].items() if n not in SPARK and s.get("profiles")]
    assert default == [], "only the Spark cluster is behind a profile"


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
