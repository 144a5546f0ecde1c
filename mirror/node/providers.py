"""Config providers on a mirror node, as Kafka's: EnvVarConfigProvider (`${env:NAME}`, only the
variables `allowlist.pattern` matches), FileConfigProvider (`${file:/path.properties:key}`) and
DirectoryConfigProvider (`${directory:/dir:file}`), both confined to `allowed.paths`.

Each node resolves references with its own environment and files, when it configures a
connector or task (KIP-710's lazy resolution): two nodes may resolve the same reference to
different values. A reference a provider cannot resolve stays literal and is reported, with the
reason, never with a value; resolved values are used in memory only.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from pathlib import PurePosixPath

from controlplane.controller.mirror.config import (
    DIRECTORY_PROVIDER,
    ENV_PROVIDER,
    FILE_PROVIDER,
    ProviderDeclaration,
)
from controlplane.controller.mirror.properties import PropertiesError, parse_properties
from controlplane.controller.mirror.references import Reference, transform


@dataclasses.dataclass(frozen=True, slots=True)
class Unresolved:
    key: str  # the config key whose value holds the reference
    reference: str  # as written, ${...}
    reason: str

    def describe(self) -> str:
        return f"{self.reference} in {self.key}: {self.reason}"


@dataclasses.dataclass(frozen=True, slots=True)
class Resolution:
    values: dict[str, str]  # resolved: held in memory, never logged, stored or reported
    unresolved: tuple[Unresolved, ...]

    def trace(self) -> str | None:
        if not self.unresolved:
            return None
        return "Unresolved config provider references (left literal): " + "; ".join(
            u.describe() for u in self.unresolved
        )


def _allowed(path: str, allowed_paths: str | None) -> str | None:
    """Kafka's AllowedPaths.parseUntrustedPath: the normalised path when allowed, else None."""
    normalised = os.path.normpath(path)
    if not allowed_paths:
        return normalised
    for allowed in allowed_paths.split(","):
        if PurePosixPath(normalised).is_relative_to(os.path.normpath(allowed.strip())):
            return normalised
    return None


# Why a reference stays literal when what it names is not there (a file, a key, a variable):
# which is missing is not said, as a status trace may reach whoever can read it (issue 34).
UNRESOLVABLE = "unresolvable on this node"


class Providers:
    """The providers a configuration declares, on this node (its environment, its files)."""

    def __init__(
        self,
        declarations: Mapping[str, ProviderDeclaration],
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.declarations = dict(declarations)
        self.environ = dict(os.environ if environ is None else environ)

    def resolve(self, config: Mapping[str, str]) -> Resolution:
        """Every value with its references resolved where this node can."""
        files: dict[tuple[str, str], dict[str, str] | str] = {}  # read once per resolution
        reasons: dict[str, str] = {}

        def lookup(provider: str, path: str, key: str) -> str | None:
            value, why = self._lookup(provider, path, key, files)
            if why:
                reasons[f"{provider}:{path}:{key}"] = why
            return value

        values: dict[str, str] = {}
        unresolved: list[Unresolved] = []
        for name, raw in config.items():
            value, left = transform(raw, lookup)
            values[name] = value
            unresolved.extend(
                Unresolved(name, ref.text, reasons.get(_key(ref), "not resolved")) for ref in left
            )
        return Resolution(values, tuple(unresolved))

    def _lookup(
        self,
        provider: str,
        path: str,
        key: str,
        files: dict[tuple[str, str], dict[str, str] | str],
    ) -> tuple[str | None, str]:
        declaration = self.declarations.get(provider)
        if declaration is None:
            return None, f"no config provider {provider!r} is declared"
        kind, params = declaration.kind, declaration.params
        if kind == ENV_PROVIDER:
            pattern = params.get("allowlist.pattern", ".*")
            if path:
                return None, "EnvVarConfigProvider takes no path"
            if not re.fullmatch(pattern, key):
                return None, f"environment variable {key} is not allowed by allowlist.pattern"
            if key not in self.environ:
                return None, UNRESOLVABLE
            return self.environ[key], ""
        allowed = _allowed(path, params.get("allowed.paths"))
        if allowed is None:
            return None, f"{path} is outside allowed.paths"
        if kind == FILE_PROVIDER:
            return self._from_file(allowed, key, files)
        if kind == DIRECTORY_PROVIDER:
            return self._from_directory(allowed, key)
        return None, f"unknown provider kind {kind}"

    @staticmethod
    def _from_file(
        path: str, key: str, files: dict[tuple[str, str], dict[str, str] | str]
    ) -> tuple[str | None, str]:
        read = files.get((FILE_PROVIDER, path))
        if read is None:
            try:
                with open(path, encoding="utf-8") as handle:
                    read = parse_properties(handle.read()).values
            except (OSError, UnicodeDecodeError, PropertiesError) as error:
                read = f"cannot read {path} ({type(error).__name__})"
            files[(FILE_PROVIDER, path)] = read
        if isinstance(read, str) or key not in read:
            return None, UNRESOLVABLE  # which of the file or the key is missing: not said
        return read[key], ""

    @staticmethod
    def _from_directory(path: str, key: str) -> tuple[str | None, str]:
        if "/" in key or key in ("", ".", ".."):
            return None, f"{key!r} is not a file name"
        target = os.path.join(path, key)
        if not os.path.isfile(target):
            return None, UNRESOLVABLE
        try:
            with open(target, encoding="utf-8") as handle:
                return handle.read(), ""
        except (OSError, UnicodeDecodeError):
            return None, UNRESOLVABLE


def _key(reference: Reference) -> str:
    return f"{reference.provider}:{reference.path}:{reference.key}"
