# pyright: standard
"""The report of `jaxcontam audit`: PNG plots and a self-contained report.html.

    from jaxcontam.report import write_report
    write_report(summary, items, "out/")   # -> out/report.html, out/plots/*.png

`summary` is the dict of summary.json and `items` the per-(model, item) rows.
matplotlib is imported only when a plot is drawn, so importing this package is cheap.
"""

from jaxcontam.report.html import write_report

__all__ = ["write_report"]
