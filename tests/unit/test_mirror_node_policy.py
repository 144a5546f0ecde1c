"""A node's operator bounds what any stored text makes the node read (issue 34, point 1): the
provider kinds it instantiates (Kafka's `org.apache.kafka.automatic.config.providers`), the
environment variables (`--env-allowlist`, intersected with the text's `allowlist.pattern`) and
the paths (`--allowed-paths`, intersected with the text's KIP-993 `allowed.paths`, by name and by
where links lead). A refused reference stays literal and says why, never with a value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controlplane.controller.mirror.config import mirror_config_parse
from mirror.node.providers import NodePolicy, PolicyError, Providers

DECLARED = """clusters = A, B
emit.heartbeats.enabled = false
config.providers = env, file, dir
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.file.class = FileConfigProvider
config.providers.dir.class = DirectoryConfigProvider
"""
ENVIRON = {
    "MM2_A_TOKEN": "S3CRET-A",
    "MM2_HOST": "127.0.0.2",
    "CP_MIRROR_TOKEN": "S3CRET-NODE-TOKEN",
    "CP_SECRET_KEY": "S3CRET-DJANGO",
    "HOME_SECRET": "S3CRET-HOME",
}


def providers(
    text_params: str = "", policy: NodePolicy | None = None, environ: dict[str, str] | None = None
) -> Providers:
    config = mirror_config_parse(DECLARED + text_params)
    return Providers(config.providers, ENVIRON if environ is None else environ, policy)


def reasons(resolved: Any) -> dict[str, str]:
    return {u.key: u.reason for u in resolved.unresolved}


def no_value_in(resolved: Any) -> None:
    trace = resolved.trace() or ""
    for value in (*ENVIRON.values(), "S3CRET"):
        assert value not in trace


def test_the_env_provider_resolves_what_both_the_text_and_the_node_allow() -> None:
    refs = {
        "a": "${env:MM2_A_TOKEN}",
        "host": "${env:MM2_HOST}",
        "home": "${env:HOME_SECRET}",
        "node": "${env:CP_MIRROR_TOKEN}",
    }
    text = "config.providers.env.param.allowlist.pattern = MM2_.*|CP_MIRROR_TOKEN\n"
    node = NodePolicy.parse(env_allowlist="MM2_A_.*|HOME_SECRET")
    resolved = providers(text, node).resolve(refs)
    assert resolved.values["a"] == "S3CRET-A"  # both patterns admit it
    for key in ("host", "home", "node"):
        assert resolved.values[key] == refs[key], key  # left literal
    why = reasons(resolved)
    assert "not allowed by this node (--env-allowlist)" in why["host"]  # the node's bound
    assert "not allowed by allowlist.pattern" in why["home"]  # the text's own
    assert "not allowed by this node" in why["node"]
    no_value_in(resolved)


def test_the_nodes_own_variables_never_resolve_unless_its_operator_admits_them() -> None:
    """`A.token = ${env:CP_MIRROR_TOKEN}` with the text's pattern at its default (.*): the
    node's token (and the house's other CP_* settings) stay literal without an allow-list of
    the node's own; an operator's pattern that names them is an explicit choice."""
    refs = {
        "token": "${env:CP_MIRROR_TOKEN}",
        "key": "${env:CP_SECRET_KEY}",
        "a": "${env:MM2_A_TOKEN}",
    }
    resolved = providers().resolve(refs)
    assert resolved.values["token"] == "${env:CP_MIRROR_TOKEN}"
    assert resolved.values["key"] == "${env:CP_SECRET_KEY}"
    assert resolved.values["a"] == "S3CRET-A"  # other variables: the text's pattern decides
    assert "this node's own (see --env-allowlist)" in reasons(resolved)["token"]
    no_value_in(resolved)
    explicit = providers(policy=NodePolicy.parse(env_allowlist="CP_MIRROR_TOKEN"))
    assert explicit.resolve(refs).values["token"] == "S3CRET-NODE-TOKEN"
    # An empty allow-list admits no variable at all.
    nothing = providers(policy=NodePolicy.parse(env_allowlist="")).resolve(refs)
    assert nothing.values == refs


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """allowed/ (the text's allowed.paths) holding node/ (the node's), a secret outside both,
    and links inside node/ that lead out of it."""
    allowed, node = tmp_path / "allowed", tmp_path / "allowed" / "node"
    (node / "dir").mkdir(parents=True)
    (node / "mm2.properties").write_text("token = S3CRET-NODE-FILE\n")
    (node / "dir" / "token").write_text("S3CRET-NODE-DIR")
    (allowed / "text-only.properties").write_text("token = S3CRET-TEXT-ONLY\n")
    (tmp_path / "outside.properties").write_text("token = S3CRET-OUTSIDE\n")
    (node / "link.properties").symlink_to(allowed / "text-only.properties")
    (node / "dir" / "linked").symlink_to(tmp_path / "outside.properties")
    return tmp_path


def test_file_and_directory_providers_read_only_where_both_allow(tree: Path) -> None:
    allowed, node = tree / "allowed", tree / "allowed" / "node"
    text = (
        f"config.providers.file.param.allowed.paths = {allowed}\n"
        f"config.providers.dir.param.allowed.paths = {allowed}\n"
    )
    refs = {
        "in_both": f"${{file:{node}/mm2.properties:token}}",
        "dir_in_both": f"${{dir:{node}/dir:token}}",
        "text_only": f"${{file:{allowed}/text-only.properties:token}}",
        "dotdot": f"${{file:{node}/../text-only.properties:token}}",
        "dotdot_out": f"${{file:{node}/../../outside.properties:token}}",
        "link": f"${{file:{node}/link.properties:token}}",
        "dir_link": f"${{dir:{node}/dir:linked}}",
    }
    resolved = providers(text, NodePolicy.parse(allowed_paths=f" {node}/ ")).resolve(refs)
    assert resolved.values["in_both"] == "S3CRET-NODE-FILE"
    assert resolved.values["dir_in_both"] == "S3CRET-NODE-DIR"
    for key in ("text_only", "dotdot", "dotdot_out", "link", "dir_link"):
        assert resolved.values[key] == refs[key], key
    why = reasons(resolved)
    for key in ("text_only", "dotdot", "link", "dir_link"):
        assert "outside this node's allowed paths (--allowed-paths)" in why[key], key
    assert "outside allowed.paths" in why["dotdot_out"]  # the text's own bound comes first
    trace = resolved.trace() or ""
    assert "S3CRET" not in trace


def test_the_nodes_paths_bound_a_text_that_sets_none(tree: Path) -> None:
    """A text without allowed.paths allows every path (Kafka's default): the node's bound
    still applies."""
    node = tree / "allowed" / "node"
    refs = {
        "inside": f"${{file:{node}/mm2.properties:token}}",
        "outside": f"${{file:{tree}/outside.properties:token}}",
        "passwd": "${file:/etc/passwd:root}",
        "relative": "${file:/etc/../etc/passwd:root}",
    }
    unbounded = providers().resolve(refs)
    assert unbounded.values["outside"] == "S3CRET-OUTSIDE"  # what issue 34 found
    resolved = providers(policy=NodePolicy.parse(allowed_paths=str(node))).resolve(refs)
    assert resolved.values["inside"] == "S3CRET-NODE-FILE"
    assert {k: v for k, v in resolved.values.items() if k != "inside"} == {
        k: v for k, v in refs.items() if k != "inside"
    }
    nowhere = providers(policy=NodePolicy.parse(allowed_paths="")).resolve(refs)
    assert nowhere.values == refs  # an empty list allows no path


def test_a_provider_kind_the_node_does_not_allow_is_never_instantiated(tree: Path) -> None:
    node = tree / "allowed" / "node"
    refs = {
        "env": "${env:MM2_A_TOKEN}",
        "file": f"${{file:{node}/mm2.properties:token}}",
        "dir": f"${{dir:{node}/dir:token}}",
    }
    only_env = providers(policy=NodePolicy.parse(config_providers="env")).resolve(refs)
    assert only_env.values["env"] == "S3CRET-A"
    assert only_env.values["file"] == refs["file"] and only_env.values["dir"] == refs["dir"]
    why = reasons(only_env)
    assert (
        why["file"] == "this node does not instantiate file config providers (--config-providers)"
    )
    assert "directory config providers" in why["dir"]
    no_value_in(only_env)
    for none in ("none", "", " , "):
        assert (
            providers(policy=NodePolicy.parse(config_providers=none)).resolve(refs).values == refs
        )
    # Kafka's class names name the same kinds.
    kafka = NodePolicy.parse(
        config_providers="org.apache.kafka.common.config.provider.FileConfigProvider, "
        "DirectoryConfigProvider"
    )
    assert kafka.provider_kinds == frozenset({"file", "directory"})
    both = providers(policy=kafka).resolve(refs)
    assert both.values["file"] == "S3CRET-NODE-FILE" and both.values["env"] == refs["env"]


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ({"config_providers": "env, vault"}, "--config-providers: unknown provider 'vault'"),
        ({"env_allowlist": "MM2_("}, "--env-allowlist: invalid regular expression"),
        ({"allowed_paths": "/etc/mm2, secrets"}, "--allowed-paths: 'secrets' is not an absolute"),
    ],
)
def test_a_bound_that_does_not_parse_is_refused(given: dict[str, str], why: str) -> None:
    with pytest.raises(PolicyError, match=why.replace("(", r"\(")):
        NodePolicy.parse(**given)


def test_the_commands_options_and_their_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.management import CommandError, call_command

    from mirror.management.commands import run_mirror_node as command

    environ = {
        "CP_MIRROR_CONFIG_PROVIDERS": "env,file",
        "CP_MIRROR_ENV_ALLOWLIST": "MM2_.*",
        "CP_MIRROR_ALLOWED_PATHS": "/etc/mm2,/run/secrets/",
    }
    unset = {"config_providers": None, "env_allowlist": None, "allowed_paths": None}
    assert command.node_policy(unset, {}) == NodePolicy()  # Kafka's defaults
    assert command.node_policy(unset, environ) == NodePolicy(
        frozenset({"env", "file"}), "MM2_.*", ("/etc/mm2", "/run/secrets")
    )
    options = {"config_providers": "none", "env_allowlist": "", "allowed_paths": "/srv"}
    assert command.node_policy(options, environ) == NodePolicy(frozenset(), "", ("/srv",))

    started: list[dict[str, Any]] = []

    class Node:
        def __init__(self, **kwargs: Any) -> None:
            started.append(kwargs)

        def run(self) -> None: ...

        def stop(self) -> None: ...

    monkeypatch.setattr(command, "MirrorNode", Node)
    monkeypatch.setattr(command, "_progress_to_stdout", lambda level: None)
    monkeypatch.setattr(command.signal, "signal", lambda *args: None)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    call_command(
        "run_mirror_node",
        "--url",
        "http://127.0.0.1:1",
        "--token",
        "t",
        "--env-allowlist",
        "MM2_A_TOKEN",
    )
    (kwargs,) = started
    assert kwargs["policy"] == NodePolicy(
        frozenset({"env", "file"}), "MM2_A_TOKEN", ("/etc/mm2", "/run/secrets")
    )
    monkeypatch.setenv("CP_MIRROR_ALLOWED_PATHS", "relative/path")
    with pytest.raises(CommandError, match="--allowed-paths"):
        call_command("run_mirror_node", "--url", "http://127.0.0.1:1", "--token", "t")
    assert len(started) == 1
    parser = command.Command().create_parser("manage.py", "run_mirror_node")
    assert "CP_MIRROR_TOKEN" in parser.format_help()  # the help says how the token stays out
