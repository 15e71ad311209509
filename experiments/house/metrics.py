"""The house's measures from issue 60, read from the source tree (no import, nothing runs): the package's functions
over 60 lines, the package files that name `alpha`, its config and settings classes by field count, and the
`sys.path` edits in experiments/.

    python -m experiments.house.metrics [--root DIR] [--json]
"""

from __future__ import annotations

import argparse
import ast
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
LONG = 60  # lines: a function longer than this is counted


def measure(root: pathlib.Path) -> dict:
    package = root / "jaxcontam"
    long_functions, alpha_files, config_fields = [], [], {}
    for path in sorted(package.rglob("*.py")):
        name = str(path.relative_to(root))
        source = path.read_text(encoding="utf-8")
        if re.search(r"\balpha\b", source):
            alpha_files.append(name)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LONG:
                    long_functions.append({"function": f"{name}:{node.name}", "lines": lines})
            if isinstance(node, ast.ClassDef) and node.name.endswith(("Config", "Settings")):
                config_fields[f"{name}:{node.name}"] = sum(isinstance(b, ast.AnnAssign) for b in node.body)
    path_edits = sum(
        len(re.findall(r"sys\.path\.(?:insert|append)", p.read_text(encoding="utf-8")))
        for p in (root / "experiments").rglob("*.py")
        if p.resolve() != pathlib.Path(__file__).resolve()
    )
    return {
        "functions_over_60_lines": sorted(long_functions, key=lambda f: -f["lines"]),
        "files_naming_alpha": alpha_files,
        "largest_config_classes": sorted(config_fields.items(), key=lambda kv: -kv[1])[:5],
        "sys_path_edits_in_experiments": path_edits,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=pathlib.Path, default=ROOT)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    found = measure(args.root)
    if args.json:
        print(json.dumps(found, indent=1))
        return
    print(f"functions over {LONG} lines: {len(found['functions_over_60_lines'])}")
    for entry in found["functions_over_60_lines"]:
        print(f"  {entry['lines']:4d}  {entry['function']}")
    print(f"package files naming alpha: {len(found['files_naming_alpha'])}")
    print("largest config classes (fields): " + ", ".join(f"{k} {v}" for k, v in found["largest_config_classes"]))
    print(f"sys.path edits in experiments/: {found['sys_path_edits_in_experiments']}")


if __name__ == "__main__":
    main()
