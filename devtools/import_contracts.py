"""The import contract of a standalone program, an allow-list (pyproject's `standalone` contracts).

A standalone program runs where the control plane's server side is absent: the pure core, the
HTTP server, the broker simulator, the mirror node, the canary clients, the audit pipeline's
Spark jobs. A deny-list of what such a program must not import drifts: every new app or
dependency has to be added to every list. This contract names what the program MAY import
instead: itself, the standard library and the modules in `allowed_modules` (each with its
submodules). Everything else it reaches, directly or through any chain of imports, breaks the
contract, so a new app is forbidden to every program without any list being edited.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output
from importlinter.domain.imports import Module


@dataclass(frozen=True)
class ForbiddenReach:
    """A module the program reaches without leave, and the shortest chain that reaches it."""

    program: str
    module: str
    chain: tuple[str, ...]


class StandaloneProgramContract(Contract):
    """Configuration options:

    - source_modules: the program's packages.
    - allowed_modules: what they may import besides themselves and the standard library (the
      house's modules and external packages alike; a package allows its submodules).
    """

    type_name = "standalone"

    source_modules = fields.ListField(subfield=fields.ModuleField())
    allowed_modules = fields.ListField(subfield=fields.ModuleField(), required=False)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        # The fields hold what they parsed (import-linter sets them on the instance).
        sources = cast(list[Module], self.source_modules)
        allowed = [module.name for module in cast(list[Module] | None, self.allowed_modules) or []]
        reaches = [
            reach
            for source in sources
            for reach in forbidden_reaches(graph, program=source.name, allowed=allowed)
        ]
        return ContractCheck(kept=not reaches, metadata={"reaches": reaches})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for reach in check.metadata["reaches"]:
            output.print_error(f"{reach.program} is not allowed to import {reach.module}:")
            output.new_line()
            output.indent_cursor()
            output.print_error(" -> ".join(reach.chain), bold=False)
            output.new_line()


def forbidden_reaches(
    graph: ImportGraph, *, program: str, allowed: Iterable[str]
) -> list[ForbiddenReach]:
    """Every module `program` reaches that is neither itself, the standard library nor allowed."""
    leave = (program, *allowed)
    reached = graph.find_upstream_modules(program, as_package=True)
    forbidden = sorted(
        module
        for module in reached
        if not _within_any(module, leave) and _top_level(module) not in sys.stdlib_module_names
    )
    return [
        ForbiddenReach(
            program=program, module=module, chain=_shortest_chain(graph, program, module)
        )
        for module in forbidden
    ]


def _shortest_chain(graph: ImportGraph, program: str, module: str) -> tuple[str, ...]:
    chains = graph.find_shortest_chains(importer=program, imported=module, as_packages=True)
    return min(chains, key=lambda chain: (len(chain), chain), default=(program, module))


def _within_any(module: str, packages: Iterable[str]) -> bool:
    return any(module == package or module.startswith(f"{package}.") for package in packages)


def _top_level(module: str) -> str:
    return module.partition(".")[0]
