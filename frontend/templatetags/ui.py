"""The UI's formatting: durations and sizes for people with the raw value on hover, config and
quota values by what their name says they are, and sortable column headers."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from frontend.tables.units import bytes_text, duration_text, is_bytes_key, is_duration_key

register = template.Library()


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    try:
        number = float(str(value))
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() else number


def _raw(value: Any) -> str:
    number = _number(value)
    if number is None:
        return str(value)
    return str(int(number)) if float(number).is_integer() else repr(float(number))


@register.filter
def ms(value: Any) -> SafeString | Any:
    """604800000 → `7 d` (604800000 ms on hover)."""
    number = _number(value)
    if number is None:
        return value
    return format_html(
        '<span class="unit" title="{} ms">{}</span>', _raw(value), duration_text(number)
    )


@register.filter(name="bytes")
def bytes_filter(value: Any) -> SafeString | Any:
    """1048576 → `1 MiB` (1048576 bytes on hover)."""
    number = _number(value)
    if number is None:
        return value
    return format_html(
        '<span class="unit" title="{} bytes">{}</span>', _raw(value), bytes_text(number)
    )


@register.filter
def config_value(value: Any, name: str) -> SafeString | Any:
    """A config value as its key's name says: durations (`*.ms`), sizes (`*.bytes`)."""
    if is_duration_key(name):
        return ms(value)
    if is_bytes_key(name):
        return bytes_filter(value)
    return value


@register.filter
def quota_value(value: Any, key: str) -> SafeString | Any:
    """Byte rates as sizes per second, the rest as numbers (never 1.04858e+06)."""
    number = _number(value)
    if number is None:
        return value
    if key.endswith("_byte_rate"):
        return format_html(
            '<span class="unit" title="{} bytes/s">{}/s</span>', _raw(value), bytes_text(number)
        )
    return _raw(value)


@register.inclusion_tag("frontend/partials/sort_th.html", takes_context=True)
def sort_th(context: dict[str, Any], label: str, key: str, num: bool = False) -> dict[str, Any]:
    """A column header that sorts the list by `key` (`?sort=key`, again for `-key`), saying
    how the list is sorted now (aria-sort)."""
    sort = context.get("sort")
    current = getattr(sort, "key", None)
    descending = bool(getattr(sort, "descending", False))
    if current == key:
        state = "descending" if descending else "ascending"
        next_value = key if descending else f"-{key}"
    else:
        state = "none"
        next_value = key
    return {
        "request": context.get("request"),
        "label": label,
        "key": key,
        "num": num,
        "state": state,
        "next": next_value,
    }


@register.inclusion_tag("frontend/partials/chart.html")
def chart_canvas(
    spec: dict[str, Any], chart_id: str, label: str, css: str = "chart-box"
) -> dict[str, Any]:
    """A chart's canvas (an image with `label` for screen readers) and its data as JSON: ui.js
    draws it with Chart.js and, after each refresh, updates it in place from the new JSON."""
    return {
        "spec": spec,
        "chart_id": chart_id,
        "data_id": f"{chart_id}-data",
        "label": label,
        "css": css,
    }


@register.filter
def get_item(mapping: Any, key: str) -> Any:
    """`mapping[key]` in a template (empty when absent)."""
    return mapping.get(key, "") if hasattr(mapping, "get") else ""


# --- the hot rows, built in Python: a template loop costs too much per cell at 100 rows ----
@register.simple_tag
def heatmap_body(heatmap: Any) -> SafeString:
    """The heatmap's rows: a cell per broker, its letter and what it means on hover. Every
    value is an int or one of HEAT_ROLES' constants: nothing to escape, so plain strings (a
    format_html per cell would be most of a 5,000-partition topic page's time)."""
    rows = []
    for row in heatmap.rows:
        index = int(row.partition_index)
        cells = "".join(
            f'<td class="heat{f" heat-{cell.role}" if cell.role else ""}" title="partition '
            f'{index}, broker {int(cell.broker_id)}: {cell.description}">{cell.letter}</td>'
            for cell in row.cells
        )
        if row.leaderless:
            head = f'<tr data-heat-partition="{index}" class="leaderless"><th scope="row">{index}'
            head += ' <span class="visually-hidden">(no leader)</span></th>'
        else:
            head = f'<tr data-heat-partition="{index}"><th scope="row">{index}</th>'
        rows.append(f"{head}{cells}</tr>")
    return mark_safe("".join(rows))
