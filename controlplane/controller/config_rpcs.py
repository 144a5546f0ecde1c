"""Controller handlers (registered with dispatch.handler); see the module docstring once built."""

from __future__ import annotations
