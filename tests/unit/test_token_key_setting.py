"""The delegation-token key is a node setting: CP_DELEGATION_TOKEN_SECRET_KEY, or the file
CP_DELEGATION_TOKEN_SECRET_KEY_FILE names (a secret store's mounted file), read once at start
and stripped, then a static broker config every reader in the process sees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from controlplane.settings import BASE_DIR, env_secret

NAME = "CP_DELEGATION_TOKEN_SECRET_KEY"


def test_from_the_variable_or_the_file_stripped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(NAME, raising=False)
    monkeypatch.delenv(f"{NAME}_FILE", raising=False)
    assert env_secret(NAME) is None
    monkeypatch.setenv(NAME, "  from-the-environment \n")
    assert env_secret(NAME) == "from-the-environment"
    monkeypatch.setenv(NAME, "")
    assert env_secret(NAME) is None
    secret = tmp_path / "key"
    secret.write_text("from-a-mounted-secret\n")
    monkeypatch.delenv(NAME)
    monkeypatch.setenv(f"{NAME}_FILE", str(secret))
    assert env_secret(NAME) == "from-a-mounted-secret"
    secret.write_text("\n")
    assert env_secret(NAME) is None  # an empty file: tokens disabled


def test_both_or_an_unreadable_file_is_refused_without_the_value(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secret = tmp_path / "key"
    secret.write_text("x")
    monkeypatch.setenv(NAME, "the-value-itself")
    monkeypatch.setenv(f"{NAME}_FILE", str(secret))
    with pytest.raises(ImproperlyConfigured, match="not both") as both:
        env_secret(NAME)
    assert "the-value-itself" not in str(both.value)
    monkeypatch.delenv(NAME)
    monkeypatch.setenv(f"{NAME}_FILE", str(tmp_path / "missing"))
    with pytest.raises(ImproperlyConfigured, match="_FILE"):
        env_secret(NAME)


def static_configs(**env: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(NAME)}
    script = (
        "import json; from controlplane import settings; "
        "print(json.dumps(settings.CP_STATIC_BROKER_CONFIGS))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=BASE_DIR,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    configs: dict[str, str] = json.loads(out)
    return configs


def test_the_setting_is_a_static_broker_config(tmp_path: Path) -> None:
    assert "delegation.token.secret.key" not in static_configs()
    secret = tmp_path / "key"
    secret.write_text("mounted-key\n")
    configs = static_configs(CP_DELEGATION_TOKEN_SECRET_KEY_FILE=str(secret))
    assert configs["delegation.token.secret.key"] == "mounted-key"


def test_make_runs_brokers_read_the_same_key_from_its_file(tmp_path: Path) -> None:
    """`python -m stock_kafka.broker run --delegation-token-secret-key-file`: every broker's
    delegation.token.secret.key, from the file (never on the command line)."""
    from stock_kafka.broker import brokers_from, parser

    credentials = tmp_path / "credentials"
    credentials.write_text("kafka-broker-100 token-100\nkafka-broker-101 token-101\n")
    key = tmp_path / "key"
    key.write_text("the-runs-key\n")
    argv = ["run", "--count", "2", "--controller", "127.0.0.1:9098", "--cluster-id", "c"]
    argv += ["--credentials", str(credentials), "--work-dir", str(tmp_path / "brokers")]
    keyed = brokers_from(
        parser().parse_args([*argv, "--delegation-token-secret-key-file", str(key)])
    )
    assert [b.properties()["delegation.token.secret.key"] for b in keyed] == ["the-runs-key"] * 2
    plain = brokers_from(parser().parse_args(argv))
    assert all("delegation.token.secret.key" not in b.properties() for b in plain)
