"""Config providers on a mirror node, as Kafka's: EnvVarConfigProvider (`${env:NAME}`, only the
variables `allowlist.pattern` matches), FileConfigProvider (`${file:/path.properties:key}`) and
DirectoryConfigProvider (`${directory:/dir:file}`), both confined to `allowed.paths`.

Each node resolves references with its own environment and files, when it configures a
connector or task (KIP-710's lazy resolution): two nodes may resolve the same reference to
different values. A reference a provider cannot resolve stays literal and is reported, with the
reason, never with a value; resolved values are used in memory only.

The stored text declares the providers (only a super user may), but what a node reads from its
own host is bounded by the node's operator too (`NodePolicy`, from `run_mirror_node`'s options):
which provider kinds it instantiates (Kafka's `org.apache.kafka.automatic.config.providers`),
which environment variables and which paths it reads (KIP-993's `allowed.paths`). A reference
must pass both the text's parameters and the node's bound.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath

from controlplane.controller.mirror.config import (
    DIRECTORY_PROVIDER,
    ENV_PROVIDER,
    FILE_PROVIDER,
    PROVIDER_CLASSES,
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


def _allowed(path: str, allowed_paths: str | Iterable[str] | None) -> str | None:
    """Kafka's AllowedPaths.parseUntrustedPath: the normalised path when allowed, else None.
    `allowed_paths`: a comma-separated text (the provider's parameter) or the paths themselves;
    none or empty allows every path, as Kafka's default."""
    normalised = os.path.normpath(path)
    if isinstance(allowed_paths, str):
        bounds = [p for p in (item.strip() for item in allowed_paths.split(",")) if p]
    else:
        bounds = list(allowed_paths or ())
    if not bounds:
        return normalised
    for allowed in bounds:
        if PurePosixPath(normalised).is_relative_to(os.path.normpath(allowed)):
            return normalised
    return None


# The house's own settings live in CP_* variables, among them the node's token
# (CP_MIRROR_TOKEN): without an allow-list of its operator's, a node never resolves them.
HOUSE_VARIABLES = re.compile(r"CP_.*")
KIND_NAMES = (ENV_PROVIDER, FILE_PROVIDER, DIRECTORY_PROVIDER)
NO_PROVIDERS = "none"


class PolicyError(ValueError):
    """An operator's bound does not parse (the message names the option)."""


@dataclasses.dataclass(frozen=True, slots=True)
class NodePolicy:
    """What the node's operator lets any stored text make this node read from its host.

    Every field's None means "no bound of the node's own" (Kafka's defaults): every provider
    kind a text declares is instantiated, as Kafka instantiates every declared provider when
    `org.apache.kafka.automatic.config.providers` is unset, every path the text's
    `allowed.paths` allows is read, and every variable its `allowlist.pattern` admits is
    resolved, except the house's own `CP_*` variables (the node's token among them): those only
    when the operator's own pattern admits them."""

    provider_kinds: frozenset[str] | None = None
    env_allowlist: str | None = None  # a regex every variable name must match whole
    allowed_paths: tuple[str, ...] | None = None  # absolute, normalised

    @classmethod
    def parse(
        cls,
        *,
        config_providers: str | None = None,
        env_allowlist: str | None = None,
        allowed_paths: str | None = None,
    ) -> NodePolicy:
        """The policy from the operator's texts (None: not given). An empty provider list, or
        `none`, allows no provider, as Kafka's property set to a list naming none."""
        kinds = None if config_providers is None else _kinds(config_providers)
        if env_allowlist is not None:
            try:
                re.compile(env_allowlist)
            except re.error as error:
                raise PolicyError(
                    f"--env-allowlist: invalid regular expression ({error})"
                ) from None
        paths = None
        if allowed_paths is not None:
            paths = tuple(p.strip() for p in allowed_paths.split(",") if p.strip())
            relative = [p for p in paths if not p.startswith("/")]
            if relative:
                raise PolicyError(f"--allowed-paths: {relative[0]!r} is not an absolute path")
            paths = tuple(os.path.normpath(p) for p in paths)
        return cls(kinds, env_allowlist, paths)

    def describe(self) -> str:
        """The bound in a line for the node's log (names and paths only, nothing resolved)."""
        if self.provider_kinds is None:
            kinds = "every kind"
        else:
            kinds = ", ".join(sorted(self.provider_kinds)) or NO_PROVIDERS
        if self.env_allowlist is None:
            env = "the texts' patterns, never CP_*"
        else:
            env = f"names matching {self.env_allowlist}"
        paths = "any path" if self.allowed_paths is None else ", ".join(self.allowed_paths)
        return f"config providers: {kinds}; environment: {env}; paths: {paths}"

    def kind_refused(self, kind: str) -> str | None:
        if self.provider_kinds is None or kind in self.provider_kinds:
            return None
        return f"this node does not instantiate {kind} config providers (--config-providers)"

    def variable_refused(self, name: str) -> str | None:
        if self.env_allowlist is None:
            if HOUSE_VARIABLES.fullmatch(name):
                return f"environment variable {name} is this node's own (see --env-allowlist)"
            return None
        if re.fullmatch(self.env_allowlist, name):
            return None
        return f"environment variable {name} is not allowed by this node (--env-allowlist)"

    def path_refused(self, path: str) -> str | None:
        """A path outside the node's allowed paths, by its name or by where its links lead."""
        if self.allowed_paths is None:
            return None
        refused = f"{path} is outside this node's allowed paths (--allowed-paths)"
        if not self.allowed_paths:  # the operator gave an empty list: no path at all
            return refused
        real_bounds = [os.path.realpath(p) for p in self.allowed_paths]
        if _allowed(path, self.allowed_paths) is None or (
            _allowed(os.path.realpath(path), real_bounds) is None
        ):
            return refused
        return None


def _kinds(text: str) -> frozenset[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == [NO_PROVIDERS]:
        return frozenset()
    kinds = set()
    for name in names:
        kind = name if name in KIND_NAMES else PROVIDER_CLASSES.get(name)
        if kind is None:
            raise PolicyError(
                f"--config-providers: unknown provider {name!r} "
                f"(one of {', '.join(KIND_NAMES)}, Kafka's class names, or {NO_PROVIDERS})"
            )
        kinds.add(kind)
    return frozenset(kinds)


# Why a reference stays literal when what it names is not there (a file, a key, a variable):
# which is missing is not said, as a status trace may reach whoever can read it.
UNRESOLVABLE = "unresolvable on this node"


class Providers:
    """The providers a configuration declares, on this node (its environment, its files)."""

    def __init__(
        self,
        declarations: Mapping[str, ProviderDeclaration],
        environ: Mapping[str, str] | None = None,
        policy: NodePolicy | None = None,
    ) -> None:
        self.declarations = dict(declarations)
        self.environ = dict(os.environ if environ is None else environ)
        self.policy = policy or NodePolicy()

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
        refused = self.policy.kind_refused(kind)
        if refused:  # never instantiated here: its references stay literal
            return None, refused
        if kind == ENV_PROVIDER:
            pattern = params.get("allowlist.pattern", ".*")
            if path:
                return None, "EnvVarConfigProvider takes no path"
            if not re.fullmatch(pattern, key):
                return None, f"environment variable {key} is not allowed by allowlist.pattern"
            refused = self.policy.variable_refused(key)
            if refused:
                return None, refused
            if key not in self.environ:
                return None, UNRESOLVABLE
            return self.environ[key], ""
        allowed = _allowed(path, params.get("allowed.paths"))
        if allowed is None:
            return None, f"{path} is outside allowed.paths"
        refused = self.policy.path_refused(allowed)
        if refused:
            return None, refused
        if kind == FILE_PROVIDER:
            return self._from_file(allowed, key, files)
        if kind == DIRECTORY_PROVIDER:
            return self._from_directory(allowed, key, self.policy)
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
    def _from_directory(path: str, key: str, policy: NodePolicy) -> tuple[str | None, str]:
        if "/" in key or key in ("", ".", ".."):
            return None, f"{key!r} is not a file name"
        target = os.path.join(path, key)
        refused = policy.path_refused(target)  # a link in the directory may lead elsewhere
        if refused:
            return None, refused
        if not os.path.isfile(target):
            return None, UNRESOLVABLE
        try:
            with open(target, encoding="utf-8") as handle:
                return handle.read(), ""
        except (OSError, UnicodeDecodeError):
            return None, UNRESOLVABLE


def _key(reference: Reference) -> str:
    return f"{reference.provider}:{reference.path}:{reference.key}"
