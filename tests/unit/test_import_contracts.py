"""The import contracts cover every app, present and future, without a list to keep up.

pyproject's `[tool.importlinter]` is read as `lint-imports` reads it and checked against the
house's own import graph. An app must be installed, packaged, a root package of the contracts
and on a floor of the house; a standalone program (the core, the server, the simulator, the
mirror node, the canary clients, the Spark jobs) names what it may import, so an app nobody has
heard of yet is forbidden to it already, as an app's API package is to the UI.
"""

from __future__ import annotations

import copy
import fnmatch
import tomllib
from pathlib import Path
from typing import Any

import grimp
import pytest
from django.conf import settings
from importlinter import Contract
from importlinter.api import read_configuration
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.layers import LayersContract

from devtools.import_contracts import StandaloneProgramContract, forbidden_reaches

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
IMPORTLINTER = read_configuration(str(ROOT / "pyproject.toml"))  # as lint-imports reads it
SESSION_OPTIONS: dict[str, Any] = IMPORTLINTER["session_options"]
CONTRACTS: list[dict[str, Any]] = IMPORTLINTER["contracts_options"]
ROOT_PACKAGES: list[str] = SESSION_OPTIONS["root_packages"]
HOUSE = "The house is layered: URL roots, UI, front doors, apps, foundation"
UI_READS = "The UI reads through selectors, never through the API's views"
NEW_APP = "newapp"  # an app the contracts have never heard of


def contract_options(name: str) -> dict[str, Any]:
    (options,) = (c for c in CONTRACTS if c["name"] == name)
    return options


def build(
    contract_class: type[Contract], options: dict[str, Any], *, new_roots: tuple[str, ...] = ()
) -> Contract:
    """The contract as `lint-imports` builds it (with `new_roots` among the root packages)."""
    session = {**SESSION_OPTIONS, "root_packages": [*ROOT_PACKAGES, *new_roots]}
    fields = {k: v for k, v in options.items() if k not in {"name", "type", "id"}}
    return contract_class(name=options["name"], session_options=session, contract_options=fields)


def standalone_contracts() -> list[dict[str, Any]]:
    return [c for c in CONTRACTS if c["type"] == "standalone"]


def house_apps() -> set[str]:
    """The top-level packages of INSTALLED_APPS that live in this repository."""
    tops = {entry.partition(".")[0] for entry in settings.INSTALLED_APPS}
    return {top for top in tops if (ROOT / top / "__init__.py").is_file()}


def layer_modules(options: dict[str, Any]) -> set[str]:
    return {name.strip() for layer in options["layers"] for name in layer.split("|")}


def children(package: str) -> set[str]:
    """A root package's direct modules and subpackages, as import-linter names them."""
    folder = ROOT / package
    return {
        f"{package}.{path.stem}"
        for path in folder.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()
    }


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*ROOT_PACKAGES, include_external_packages=True, cache_dir=None)


@pytest.fixture
def graph_with_new_app(graph: grimp.ImportGraph) -> grimp.ImportGraph:
    grown = copy.deepcopy(graph)
    for module in (NEW_APP, f"{NEW_APP}.models", f"{NEW_APP}.api", f"{NEW_APP}.api.views"):
        grown.add_module(module)
    return grown


# --- Every app is covered ---------------------------------------------------------------------


def test_every_app_and_the_shell_is_a_root_package_of_the_contracts() -> None:
    expected = house_apps() | {"shell"}
    assert expected <= set(ROOT_PACKAGES), f"add {expected - set(ROOT_PACKAGES)} to root_packages"


def test_every_root_package_is_packaged() -> None:
    patterns = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    unpackaged = [p for p in ROOT_PACKAGES if not any(fnmatch.fnmatch(p, pat) for pat in patterns)]
    assert not unpackaged, f"add {unpackaged} to [tool.setuptools.packages.find] include"


def test_every_root_package_stands_on_a_floor_of_the_house() -> None:
    """A package is on a floor whole, or each of its children is (the shell's URL roots and
    front doors stand on two floors, the UI between them)."""
    named = layer_modules(contract_options(HOUSE))
    homeless = {
        package
        for package in ROOT_PACKAGES
        if package not in named and not children(package) <= named
    }
    assert not homeless, f"give {homeless} a floor in the contract {HOUSE!r}"


def test_the_house_is_kept_and_breaks_when_the_foundation_imports_an_app(
    graph: grimp.ImportGraph,
) -> None:
    house = build(LayersContract, contract_options(HOUSE))
    assert house.check(copy.deepcopy(graph), verbose=False).kept

    grown = copy.deepcopy(graph)
    grown.add_import(importer="controlplane.rpc", imported="timeline.selectors")
    assert not house.check(grown, verbose=False).kept


# --- A new app is forbidden to every standalone program and to the UI, named nowhere -------------


@pytest.mark.parametrize("options", standalone_contracts(), ids=lambda c: c["source_modules"][0])
def test_a_standalone_program_is_kept(graph: grimp.ImportGraph, options: dict[str, Any]) -> None:
    contract = build(StandaloneProgramContract, options)
    assert contract.check(copy.deepcopy(graph), verbose=False).kept


@pytest.mark.parametrize("options", standalone_contracts(), ids=lambda c: c["source_modules"][0])
def test_a_new_app_is_forbidden_to_every_standalone_program(
    graph_with_new_app: grimp.ImportGraph, options: dict[str, Any]
) -> None:
    program = options["source_modules"][0]
    graph_with_new_app.add_import(importer=program, imported=f"{NEW_APP}.models")

    check = build(StandaloneProgramContract, options).check(graph_with_new_app, verbose=False)

    assert not check.kept
    assert [(r.module, r.chain) for r in check.metadata["reaches"]] == [
        (f"{NEW_APP}.models", (program, f"{NEW_APP}.models"))
    ]


def test_a_new_apps_api_is_forbidden_to_the_ui(graph_with_new_app: grimp.ImportGraph) -> None:
    # A new app is a root package (test_every_app_and_the_shell_is_a_root_package_of_the_contracts).
    ui_reads = build(ForbiddenContract, contract_options(UI_READS), new_roots=(NEW_APP,))
    assert ui_reads.check(copy.deepcopy(graph_with_new_app), verbose=False).kept

    graph_with_new_app.add_import(importer="frontend.views.base", imported=f"{NEW_APP}.api.views")
    assert not ui_reads.check(graph_with_new_app, verbose=False).kept


# --- The standalone contract's rule, on a house of four modules -------------------------------


@pytest.fixture
def small_house() -> grimp.ImportGraph:
    small = grimp.ImportGraph()
    for module in ("program", "program.main", "core", "core.rules", "app", "app.models"):
        small.add_module(module)
    for external in ("json", "django", "httpx"):
        small.add_module(external, is_squashed=True)
    small.add_import(importer="program.main", imported="json")
    small.add_import(importer="program.main", imported="httpx")
    small.add_import(importer="program.main", imported="core.rules")
    return small


def test_itself_the_standard_library_and_what_it_names_are_allowed(
    small_house: grimp.ImportGraph,
) -> None:
    assert forbidden_reaches(small_house, program="program", allowed=["core", "httpx"]) == []


def test_what_it_does_not_name_is_forbidden(small_house: grimp.ImportGraph) -> None:
    reaches = forbidden_reaches(small_house, program="program", allowed=["core"])
    assert [(r.module, r.chain) for r in reaches] == [("httpx", ("program.main", "httpx"))]


def test_a_forbidden_module_behind_an_allowed_one_is_forbidden(
    small_house: grimp.ImportGraph,
) -> None:
    small_house.add_import(importer="core.rules", imported="app.models")
    small_house.add_import(importer="app.models", imported="django")

    reaches = forbidden_reaches(small_house, program="program", allowed=["core", "httpx"])

    assert [(r.module, r.chain) for r in reaches] == [
        ("app.models", ("program.main", "core.rules", "app.models")),
        ("django", ("program.main", "core.rules", "app.models", "django")),
    ]


# --- devtools is the project's own tooling: no product room stands on it ----------------------

NO_DEVTOOLS = "No product room imports devtools"


def test_product_rooms_are_every_root_package_but_devtools() -> None:
    """A new room is a product room until it is named devtools: the contract covers it."""
    sources = set(contract_options(NO_DEVTOOLS)["source_modules"])
    assert sources == set(ROOT_PACKAGES) - {"devtools"}


@pytest.mark.parametrize(
    "importer", ["wire.server", "stock_kafka.broker", "controlplane.runtime.controller"]
)
def test_no_product_room_imports_devtools_and_breaks_when_one_does(
    graph: grimp.ImportGraph, importer: str
) -> None:
    contract = build(ForbiddenContract, contract_options(NO_DEVTOOLS))
    assert contract.check(copy.deepcopy(graph), verbose=False).kept

    grown = copy.deepcopy(graph)
    grown.add_import(importer=importer, imported="devtools.stack")
    assert not contract.check(grown, verbose=False).kept
