"""A report's rows as a file: CSV (one file), Parquet (a directory), JSON (an array of row
objects) or a self-contained HTML page with charts (Chart.js, vendored and inlined: it opens
offline), or as a table in the terminal.

Output is written to a temporary place next to the target and moved into place at the end, so
a run that fails leaves the previous output (or nothing), never a partial file presented as
complete.
"""

from __future__ import annotations

import contextlib
import csv
import html
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from audit.spark import storage as store
from audit.spark.charts import Chart, Row, cell_text
from audit.spark.params import Params, ReportError, iso
from audit.spark.reports import Report

FORMATS = ("csv", "parquet", "html", "json")
TERMINAL_ROWS = 50
CHARTJS = Path(__file__).resolve().parents[2] / "frontend/static/vendor/chartjs/chart.umd.min.js"


class TextSink(Protocol):
    """Where the terminal table goes: a text stream, or Django's OutputWrapper."""

    def write(self, text: str, /) -> object: ...


# --- the rows, as plain values ----------------------------------------------------------------


def rows_collect(frame: Any, limit: int | None = None) -> list[Row]:
    """The report's (small, final) rows on the driver, timestamps as ISO 8601 UTC strings
    (whatever the session's time zone)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    times = [f.name for f in frame.schema.fields if isinstance(f.dataType, TimestampType)]
    plain = frame.select(
        *(F.unix_millis(F.col(c)).alias(c) if c in times else F.col(c) for c in frame.columns)
    )
    if limit is not None:
        plain = plain.limit(limit)
    rows = [row.asDict() for row in plain.collect()]
    for row in rows:
        for column in times:
            if row[column] is not None:
                row[column] = iso(int(row[column]))
    return rows


# --- the terminal -------------------------------------------------------------------------------


def table_print(frame: Any, stream: TextSink, *, limit: int = TERMINAL_ROWS) -> int:
    """The first `limit` rows as an aligned table, then how many there are in all."""
    total = int(frame.count())
    rows = rows_collect(frame, limit)
    columns = list(frame.columns)
    cells = [[cell_text(row[c]) for c in columns] for row in rows]
    widths = [max([len(c), *(len(line[i]) for line in cells)]) for i, c in enumerate(columns)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip(),
        "  ".join("-" * w for w in widths),
        *(
            "  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip()
            for line in cells
        ),
    ]
    shown = f" (the first {len(rows)} shown)" if total > len(rows) else ""
    lines.append(f"{total} row{'' if total == 1 else 's'}{shown}")
    for line in lines:  # whole lines: Django's OutputWrapper ends each write with one
        stream.write(line + "\n")
    return total


# --- files ------------------------------------------------------------------------------------


def out_check(out: str, fmt: str) -> None:
    """Refuse an output place before any work is done: a directory where a file goes, a URI
    where only a local file can be written."""
    if fmt not in FORMATS:
        raise ReportError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    if store.is_uri(out):
        if fmt != "parquet":
            raise ReportError(f"--out {out}: a {fmt} report is written to a local path")
        return
    target = Path(out).expanduser()
    if fmt != "parquet" and target.is_dir():
        raise ReportError(f"--out {out} is a directory: a {fmt} report is one file")
    parent = target.absolute().parent
    if parent.exists() and not parent.is_dir():
        raise ReportError(f"--out {out}: {parent} is not a directory")


def report_write(
    frame: Any,
    *,
    report: Report,
    params: Params,
    fmt: str,
    out: str,
    source: str,
    spark: Any,
) -> int:
    """Write the report to `out` in `fmt`; returns its row count."""
    out_check(out, fmt)
    if fmt == "parquet":
        return _parquet_write(frame, out, spark)
    rows = rows_collect(frame)
    columns = list(frame.columns)
    writers: dict[str, Callable[[Path], object]] = {
        "csv": lambda path: _csv_write(path, columns, rows),
        "json": lambda path: path.write_text(json.dumps(rows, ensure_ascii=False) + "\n"),
        "html": lambda path: path.write_text(
            html_page(report=report, params=params, columns=columns, rows=rows, source=source)
        ),
    }
    with _into_place(Path(out)) as temporary:
        writers[fmt](temporary)
    return len(rows)


def _csv_write(path: Path, columns: Sequence[str], rows: Sequence[Row]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns))
        writer.writeheader()
        writer.writerows({k: csv_safe(v) for k, v in row.items()} for row in rows)


# A text cell a spreadsheet would run as a formula (OWASP's CSV injection): a client id, a
# principal or a resource name is whatever a client sent.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> Any:
    """`value`, or a text that starts like a formula with a single quote before it (OWASP):
    the spreadsheet shows it as the text it is. Numbers are left as numbers."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _parquet_write(frame: Any, out: str, spark: Any) -> int:
    """Spark writes the directory aside; its row count is read back from what it wrote."""
    if store.is_uri(out):
        parent, _, name = out.rstrip("/").rpartition("/")
        hadoop = store.HadoopStorage(parent, spark)
        aside = f".{name}.{uuid.uuid4().hex}.tmp"
        try:
            frame.write.parquet(hadoop.uri(aside))
            count = int(spark.read.parquet(hadoop.uri(aside)).count())
            if hadoop.exists(name):
                hadoop.delete(name)
            hadoop.move(aside, name)
        finally:
            hadoop.delete(aside)
        return count
    with _into_place(Path(out)) as temporary:
        frame.write.parquet(f"file://{temporary}")
        count = int(spark.read.parquet(f"file://{temporary}").count())
    return count


@contextlib.contextmanager
def _into_place(target: Path) -> Iterator[Path]:
    """A temporary path next to `target` to write to; moved onto `target` (a file or a
    directory, replacing what was there) only when the writing finished."""
    target = target.expanduser().absolute()
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        yield temporary
        if temporary.is_dir() and target.exists():
            aside = target.with_name(f".{target.name}.{uuid.uuid4().hex}.old")
            os.replace(target, aside)
            os.replace(temporary, target)
            _remove(aside)
        else:
            os.replace(temporary, target)
    finally:
        _remove(temporary)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


# --- HTML ---------------------------------------------------------------------------------------


PALETTE = ("#2f6fb0", "#d9822b", "#3a9a5b", "#c23b3b", "#7c5cb8", "#8a6d3b", "#4aa3a3")


# A series named for an outcome or a state is coloured by what it means, whatever its order:
# success green, failure red, partial orange, in progress blue (never by order of first
# appearance, which could paint FAILED blue and SUCCESS orange).
MEANING = {
    "SUCCESS": "#3a9a5b",
    "SUCCEEDED": "#3a9a5b",
    "FAILED": "#c23b3b",
    "DENIED": "#c23b3b",
    "PARTIAL": "#d9822b",
    "RUNNING": "#2f6fb0",
    "PENDING": "#2f6fb0",
}


def series_colour(name: str, index: int) -> str:
    return MEANING.get(str(name).upper(), PALETTE[index % len(PALETTE)])


def chart_config(chart: Chart, rows: Sequence[Row]) -> dict[str, Any]:
    """A Chart.js configuration of `chart` over `rows` (summed per label, in order of first
    appearance)."""
    labels: list[str] = []
    sums: dict[tuple[str, str], float] = {}
    names: list[str] = []
    for row in rows:
        label = chart.label(row)
        if label not in labels:
            labels.append(label)
        for column in chart.values:
            name = chart.series(row) if chart.series else (column or "rows")
            if name not in names:
                names.append(name)
            value = 1 if column is None else row.get(column) or 0
            sums[(name, label)] = sums.get((name, label), 0) + value
    datasets = [
        {
            "label": name,
            "data": [sums.get((name, label), 0) for label in labels],
            "backgroundColor": (
                [series_colour(label, j) for j, label in enumerate(labels)]
                if chart.kind == "doughnut"
                else series_colour(name, i)
            ),
        }
        for i, name in enumerate(names)
    ]
    scales = {"x": {"stacked": chart.stacked}, "y": {"stacked": chart.stacked, "beginAtZero": True}}
    return {
        "type": chart.kind,
        "data": {"labels": labels, "datasets": datasets},
        "options": {
            "animation": False,
            "plugins": {"title": {"display": True, "text": chart.title}},
            **({} if chart.kind == "doughnut" else {"scales": scales}),
        },
    }


def chartjs_source() -> str:
    try:
        source = CHARTJS.read_text()
    except OSError as error:
        raise ReportError(f"cannot read Chart.js at {CHARTJS}: {error.strerror}") from None
    if "</script" in source.lower():
        raise ReportError(f"{CHARTJS} cannot be inlined: it contains a closing script tag")
    return source


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(value).replace("</", "<\\/").replace("<!--", "<\\!--")


STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2rem; color: #1d2733; }
h1 { font-size: 1.4rem; margin: 0 0 .5rem; }
.meta { color: #5a6573; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2rem 1rem; }
dt { font-weight: 600; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5rem; margin: 1.5rem 0; }
.charts figure { margin: 0; width: 520px; max-width: 100%; }
table { border-collapse: collapse; margin-top: 1rem; }
th, td { border: 1px solid #d5dae1; padding: .25rem .5rem; text-align: left; }
th { background: #eef1f5; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
"""


def html_page(
    *,
    report: Report,
    params: Params,
    columns: Sequence[str],
    rows: Sequence[Row],
    source: str,
) -> str:
    """A self-contained page: the title, the parameters, the charts and the rows as a table."""
    esc = html.escape
    parameters = {
        "report": report.name,
        "export": source,
        **params.described(),
        "generated": iso(params.now_ms),
        "rows": str(len(rows)),
    }
    charts = [chart_config(c, rows) for c in report.info.charts] if rows else []
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "\n".join(
        "<tr>"
        + "".join(
            f'<td class="number">{esc(cell_text(row[c]))}</td>'
            if isinstance(row[c], int | float) and not isinstance(row[c], bool)
            else f"<td>{esc(cell_text(row[c]))}</td>"
            for c in columns
        )
        + "</tr>"
        for row in rows
    )
    figures = "".join(
        f'<figure><canvas id="chart-{i}" role="img" aria-label="{esc(c.title)}"></canvas>'
        f"<figcaption>{esc(c.title)}</figcaption></figure>"
        for i, c in enumerate(report.info.charts)
        if i < len(charts)
    )
    described = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in parameters.items())
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(report.title)}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>{esc(report.title)}</h1>
<dl class="parameters">{described}</dl>
<div class="charts">{figures}</div>
<table class="rows">
<thead><tr>{head}</tr></thead>
<tbody>
{body}
</tbody>
</table>
<p class="meta">{len(rows)} row{"" if len(rows) == 1 else "s"}.</p>
<script>{chartjs_source()}</script>
<script>
const charts = {_script_json(charts)};
charts.forEach((config, i) => new Chart(document.getElementById("chart-" + i), config));
</script>
</body>
</html>
"""
