"""Does an audit's report.html fit the window? Screenshots and overflow measured in headless Chromium.

report.html (jaxcontam/report/html.py) must read without sideways scrolling in a 1400 px wide window and stay
usable at 800 px. Looking at screenshots is not enough to hold that, so for each window width this renders a
PNG (out_dir/report-<W>.png) and measures the layout: a temporary copy of the page gets a small script that, on
load, writes into a <pre id="overflow"> the document's scrollWidth against the window's innerWidth, every
<table>'s right edge against its container's content box and the viewport, the widest element past the
viewport's right edge, the cells whose content is wider than the cell (cut off), and how many lines the
tallest model-name cell takes; `chromium --dump-dom` reads it back. One line per width, PASS or FAIL with the
widest offender; the measurements go to out_dir/overflow-<W>.json. Exit status 1 when any width overflows.
(Headless Chromium's window is at least 500 px wide: a narrower --widths entry is measured at 500.)

Chromium from Debian (`apt-get install chromium`), found on the PATH or given with --chromium. Without one it
exits 2, or 0 with --allow-missing (a skip, with a message).

    python -m experiments.house.report_screenshots /tmp/bundled-audit/report.html /tmp/shots
    python -m experiments.house.report_screenshots report.html /tmp/shots --widths 1400 800 1100 --allow-missing
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]

MEASURE = """<script>
addEventListener("load", () => {
  const vw = window.innerWidth, right = (e) => e.getBoundingClientRect().right;
  const name = (e) => e.tagName.toLowerCase() + (e.className ? "." + String(e.className).split(" ").join(".") : "")
    + (e.parentElement && e.tagName === "TD" ? "[" + (e.cellIndex + 1) + "]" : "");
  let widest = null;
  for (const e of document.body.querySelectorAll("*")) {
    const r = right(e);
    if (r > vw + 0.5 && (!widest || r > widest.right)) widest = {element: name(e), right: Math.round(r)};
  }
  const tables = [...document.querySelectorAll("table")].map((t, i) => {
    const box = t.parentElement, style = getComputedStyle(box);
    const inside = right(box) - parseFloat(style.paddingRight) - parseFloat(style.borderRightWidth);
    const first = (t.querySelector("th, td") || t).textContent.trim().slice(0, 30);
    return {index: i, element: name(t), first_cell: first, right: Math.round(right(t)),
            container_right: Math.round(inside), overflows: right(t) > inside + 0.5 || right(t) > vw + 0.5};
  });
  const cut = [...document.querySelectorAll("td, th")].filter((c) => c.scrollWidth > c.clientWidth + 1)
    .map((c) => name(c.closest("table")) + " " + name(c));
  const lines = [...document.querySelectorAll("td.model")].map((c) => {
    const text = document.createRange();
    text.selectNodeContents(c);
    return new Set([...text.getClientRects()].map((r) => Math.round(r.top))).size;
  });
  const pre = document.createElement("pre");
  pre.id = "overflow";
  pre.textContent = JSON.stringify({inner_width: vw, scroll_width: document.documentElement.scrollWidth,
    widest, tables, cut_cells: cut, model_cell_lines: Math.max(0, ...lines)});
  document.body.appendChild(pre);
});
</script>"""


def find_chromium(given: str | None) -> str | None:
    """The Chromium binary: --chromium if given, else the first of BINARIES on the PATH."""
    if given:
        return shutil.which(given) or (given if Path(given).exists() else None)
    return next((found for b in BINARIES if (found := shutil.which(b))), None)


def chromium_version(binary: str) -> str:
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or done.stderr.strip()


def screenshot(binary: str, page: Path, png: Path, width: int, height: int) -> None:
    size = f"--window-size={width},{height}"
    subprocess.run(
        [binary, *FLAGS, f"--screenshot={png}", size, page.resolve().as_uri()], capture_output=True, timeout=120
    )


def measure(binary: str, probe: Path, width: int, height: int) -> dict:
    """Load the page copy that carries MEASURE at one window width; its <pre id=overflow> as a dict."""
    args = [binary, *FLAGS, "--dump-dom", "--virtual-time-budget=2000", f"--window-size={width},{height}"]
    done = subprocess.run([*args, probe.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="overflow">(.*?)</pre>', done.stdout, re.DOTALL)
    if found is None:
        raise RuntimeError(f"no measurement in chromium's DOM at {width} px:\n{done.stderr[-2000:]}")
    return json.loads(html.unescape(found.group(1)))


def verdict(width: int, m: dict) -> tuple[bool, str]:
    """(passes, one line): the page fits when nothing is wider than the window, no table passes its container
    and no cell cuts its content."""
    bad_tables = [t for t in m["tables"] if t["overflows"]]
    ok = m["scroll_width"] <= m["inner_width"] and not bad_tables and not m["cut_cells"]
    parts = [
        f"{width}px: {'PASS' if ok else 'FAIL'}",
        f"scrollWidth {m['scroll_width']} / innerWidth {m['inner_width']}",
    ]
    if m["widest"]:
        parts.append(f"widest {m['widest']['element']} right edge {m['widest']['right']}")
    if bad_tables:
        worst = max(bad_tables, key=lambda t: t["right"] - t["container_right"])
        parts.append(
            f"{len(bad_tables)} table(s) past their container, worst {worst['element']} #{worst['index']} "
            f"({worst['first_cell']!r}) "
            f"right {worst['right']} > {worst['container_right']}"
        )
    if m["cut_cells"]:
        parts.append(f"{len(m['cut_cells'])} cut cell(s), e.g. {m['cut_cells'][0]}")
    parts.append(f"model cells up to {m['model_cell_lines']} line(s)")
    return ok, "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", type=Path, help="a report.html")
    parser.add_argument("out_dir", type=Path, help="where the PNGs and overflow-<W>.json go")
    parser.add_argument("--widths", type=int, nargs="+", default=[1400, 800], help="window widths in px")
    parser.add_argument("--height", type=int, default=1200, help="window height in px (the screenshot's)")
    parser.add_argument("--chromium", help=f"the Chromium binary (default: the first of {', '.join(BINARIES)})")
    parser.add_argument("--allow-missing", action="store_true", help="exit 0 (a skip) when there is no Chromium")
    args = parser.parse_args(argv)

    binary = find_chromium(args.chromium)
    if binary is None:
        print("SKIP: no chromium binary found (apt-get install chromium, or --chromium PATH)", file=sys.stderr)
        return 0 if args.allow_missing else 2
    print(chromium_version(binary))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    page = args.report.read_text(encoding="utf-8")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "report-probe.html"
        probe.write_text(page.replace("</body>", MEASURE + "\n</body>", 1), encoding="utf-8")
        for width in args.widths:
            screenshot(binary, args.report, args.out_dir / f"report-{width}.png", width, args.height)
            m = measure(binary, probe, width, args.height)
            (args.out_dir / f"overflow-{width}.json").write_text(json.dumps(m, indent=1) + "\n", encoding="utf-8")
            ok, line = verdict(width, m)
            failed |= not ok
            print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
