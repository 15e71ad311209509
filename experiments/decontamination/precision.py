"""Precision of `jaxcontam decontaminate` on all the real text this machine holds: every flagged document listed with
its matched n-grams, each flag sorted into a real copy of an item, boilerplate, or other; the same before and after
`--drop-common K`.

Index: 15 benchmarks' evaluation splits, the default settings (gpt3 words, 13-grams, `--fields item`, floor 7,
escapes decoded). Corpora, as documents:
  clean    every Pile record of mimir_pile_nonmembers; the Gutenberg books, tinyshakespeare and the addresses in
           5,000-character pieces (text no benchmark was drawn from);
  machine  the documentation and licences installed on this machine, in 5,000-character pieces: every text file
           under /usr/share/doc (gzip ones decompressed) and the README, LICENSE, COPYING, METADATA, .md, .rst and
           .txt files of this Python's site-packages: real text dense in boilerplate (licences, changelogs, install
           notes); machine-dependent, so its files are counted and digested in the output;
  related  the project's other datasets, each record's string fields joined: GSM8K train, MMLU dev, GSM-Plus, the
           DICE and LLM-decontaminator rephrasings, XCOPA's English back-translations, the contamination-challenge
           files, MATH's 5,000 test problems (MATH-500 is drawn from them), NQ-open's EfficientQA files (text that
           may hold real copies or near copies of the items).
A flag (a document and an item it holds) is sorted by these rules, in order:
  template     every matched n-gram is held by TEMPLATE_ITEMS items or more (a benchmark's own template words,
               such as MMLU moral_scenarios' 27-word stem), so the document shares a template, not an item;
  copy         the longest matched run covers at least half of the item's own text (question and answer), or the
               item's own text is matched whole (an item shorter than 13 words);
  boilerplate  one of its matched n-grams is in BOILERPLATE_DOCUMENTS or more documents of the corpus, or its
               matched text names a licence, copyright or the Gutenberg project;
  other        the rest: a shared sentence or phrase (every one is listed, to be read).
`--drop-common K` (K = DROP_COMMON) is applied as the command applies it: n-grams held by more than K documents of
the whole corpus are left out, and a document stays flagged only through the n-grams that remain.

    .venv/bin/python -m experiments.decontamination.precision      # writes precision.json and precision.md here
    .venv/bin/python -m experiments.decontamination.precision --tokenizer ../shared/data/smollm2_135m_instruct/...gguf
                                                                    # token mode: precision_tokens.json / .md
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import hashlib
import json
import os
import re
import sysconfig
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("JAXCONTAM_SHARED_DATA", REPO.parent / "shared" / "data"))
BENCHMARKS = (
    "gsm8k",
    "mmlu",
    "hellaswag",
    "truthfulqa",
    "copa",
    "arc_easy",
    "arc_challenge",
    "piqa",
    "winogrande",
    "boolq",
    "openbookqa",
    "commonsenseqa",
    "siqa",
    "math500",
    "nq_open",
)
PIECE = 5000
BOILERPLATE_DOCUMENTS = 3
TEMPLATE_ITEMS = 5
BOILERPLATE_WORDS = re.compile(r"licen[cs]e|copyright|all rights reserved|gutenberg|terms of use", re.I)
DROP_COMMON = 10
LISTED = 2000  # flags listed (clean ones first); every flag is counted


def _pieces(text: str) -> list[str]:
    return [text[i : i + PIECE] for i in range(0, len(text), PIECE)]


def clean_documents() -> list[tuple[str, str]]:
    docs = []
    for path in sorted((DATA / "mimir_pile_nonmembers").rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            docs += [(f"{path.parent.name}/{path.name}:{k}", json.loads(line)["text"]) for k, line in enumerate(f)]
    books = sorted((DATA / "corpus_gutenberg" / "books").glob("*.txt")) + sorted((DATA / "corpus_misc").rglob("*.txt"))
    for path in books:
        text = path.read_bytes().decode("utf-8", "replace")
        docs += [(f"{path.name}#{k}", piece) for k, piece in enumerate(_pieces(text))]
    return docs


def _doc_files() -> list[Path]:
    site = Path(sysconfig.get_paths()["purelib"])
    named = ("README", "LICENSE", "COPYING", "METADATA")
    files = [p for p in sorted(Path("/usr/share/doc").rglob("*")) if p.is_file() and not p.is_symlink()]
    files += [
        p
        for p in sorted(site.rglob("*"))
        if p.is_file() and (p.suffix in (".md", ".rst", ".txt") or p.name.startswith(named))
    ]
    return files


def machine_documents() -> tuple[list[tuple[str, str]], dict]:
    """Documentation and licences of this machine in pieces, and (files, sha256 over every path and content)."""
    docs, digest, files = [], hashlib.sha256(), 0
    for path in _doc_files():
        try:
            data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        except (OSError, EOFError):
            continue
        if b"\0" in data[:4096]:  # binary
            continue
        files += 1
        digest.update(f"{path}\0{hashlib.sha256(data).hexdigest()}\n".encode())
        text = data.decode("utf-8", "replace")
        docs += [(f"{_shown(path)}#{k}", piece) for k, piece in enumerate(_pieces(text))]
    return docs, {"files": files, "sha256": digest.hexdigest()}


def _shown(path: Path) -> str:
    """A document's name without this machine's folders: a site-packages file from that folder on."""
    site = Path(sysconfig.get_paths()["purelib"])
    return f"site-packages/{path.relative_to(site)}" if path.is_relative_to(site) else str(path)


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _json_records(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".json":
        rows = json.loads(text)
        rows = rows if isinstance(rows, list) else [rows]
    else:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return ["\n".join(_strings(row)) for row in rows]


def related_documents() -> list[tuple[str, str]]:
    files = [DATA / "gsm8k" / "train.jsonl", DATA / "gsm_plus" / "gsmplus_testmini.jsonl"]
    files += sorted((DATA / "dice_rephrased").rglob("*.jsonl")) + sorted((DATA / "dice_rephrased").rglob("*.json"))
    files += sorted((DATA / "llm_decontaminator_rephrase").glob("*.jsonl"))
    files += sorted((DATA / "xcopa").rglob("*en*.jsonl")) + sorted((DATA / "tatsu_contam_challenge").glob("*.jsonl"))
    files += sorted((DATA / "math" / "MATH_test_5000").glob("*.jsonl"))
    files += sorted((DATA / "nq_open").glob("NQ-open.efficientqa.*.jsonl"))
    docs = []
    for path in files:
        if path.exists():
            name = path.relative_to(DATA).as_posix()
            docs += [(f"{name}:{k}", text) for k, text in enumerate(_json_records(path))]
    for path in sorted((DATA / "mmlu" / "dev").glob("*.csv")):
        with path.open(encoding="utf-8") as f:
            docs += [(f"mmlu/dev/{path.name}:{k}", "\n".join(row)) for k, row in enumerate(csv.reader(f))]
    return docs


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenizer", help="token mode with this tokenizer (GGUF, tokenizer.json folder, .tiktoken)")
    parser.add_argument("--n", type=int, default=None, help="n-gram length (default: the mode's)")
    parser.add_argument("--letter-share", type=float, default=None, help="IndexSettings.letter_share (the mode's)")
    args = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from jaxcontam.data import load_benchmark
    from jaxcontam.decontam import DecontIndex, IndexSettings, benchmark_items, find_batch

    loaded, skipped = [], {}
    for name in BENCHMARKS:
        try:
            loaded.append(load_benchmark(name, path=DATA))
        except Exception as error:  # noqa: BLE001  (named in the output: a benchmark this data cannot load)
            skipped[name] = str(error).split("\n")[0][:200]
    items = benchmark_items(loaded)
    tokens = {"unit": "tokens", "tokenizer": args.tokenizer} if args.tokenizer else {}
    index = DecontIndex.build(items, IndexSettings(n=args.n, letter_share=args.letter_share, **tokens))
    position = {(i.benchmark, i.id): k for k, i in enumerate(items)}
    own_chars = np.array([len(" ".join(" ".join(i.own).split())) for i in items])
    machine, machine_files = machine_documents()
    groups = {"clean": clean_documents(), "machine": machine, "related": related_documents()}
    print(f"{len(items)} items of {len(loaded)} benchmarks; skipped {skipped}", flush=True)
    flags, started = [], time.perf_counter()
    sizes = {}
    row_documents: Counter = Counter()
    for group, docs in groups.items():
        sizes[group] = {"documents": len(docs), "megabytes": sum(len(t.encode()) for _, t in docs) / 1e6}
        for start in range(0, len(docs), 512):
            batch = docs[start : start + 512]
            for (name, text), result in zip(batch, find_batch(index, [t for _, t in batch])):
                if not result.matches:
                    continue
                rows = sorted(set(result.rows.tolist()))
                row_documents.update(rows)
                for match in result.matches:
                    k = position[(match.benchmark, match.item_id)]
                    mine = [r for r in rows if k in index.row_items(r).tolist()]
                    template = all(len(index.row_items(r)) >= TEMPLATE_ITEMS for r in mine)
                    flags.append(
                        {
                            "group": group,
                            "document": name,
                            "item": f"{match.benchmark}/{match.item_id}",
                            "coverage": round(match.longest / max(own_chars[k], 1), 3),
                            "whole_short_item": bool(index.row_length[mine].min() < index.n) if mine else False,
                            "template": template,
                            "rows": mine,
                            "matched_text": text[match.start : match.end][:300],
                        }
                    )
        print(f"{group}: {sizes[group]} in {time.perf_counter() - started:.0f} s, {len(flags)} flags", flush=True)
    for flag in flags:
        df = max(row_documents[r] for r in flag["rows"]) if flag["rows"] else 0
        flag["most_documents_of_an_ngram"] = df
        flag["ngrams"] = [index.row_text(r) for r in flag["rows"][:3]]
        if flag.pop("template"):
            flag["category"] = "template"
        elif flag["coverage"] >= 0.5 or flag["whole_short_item"]:
            flag["category"] = "copy"
        elif df >= BOILERPLATE_DOCUMENTS or BOILERPLATE_WORDS.search(flag["matched_text"]):
            flag["category"] = "boilerplate"
        else:
            flag["category"] = "other"
        flag["kept_by_drop_common"] = any(row_documents[r] <= DROP_COMMON for r in flag["rows"])
        flag["ngrams_matched"] = len(flag.pop("rows"))
    counts: dict[str, dict[str, Counter]] = {}  # group -> category -> flags, kept by --drop-common, documents
    per_file: dict[str, Counter] = {}
    for f in flags:
        mine = counts.setdefault(f["group"], {"all": Counter(), "kept": Counter(), "documents": Counter()})
        mine["all"][f["category"]] += 1
        mine["kept"][f["category"]] += f["kept_by_drop_common"]
        mine["documents"][f["document"]] += 1
        if f["group"] == "related":
            per_file.setdefault(f["document"].split(":")[0], Counter())[f["category"]] += 1
    summary = {
        "date": time.strftime("%Y-%m-%d"),
        "counts": {
            g: {
                "flags": dict(c["all"]),
                "kept_by_drop_common": dict(c["kept"]),
                "flagged_documents": len(c["documents"]),
            }
            for g, c in counts.items()
        },
        "related_per_file": {name: dict(c) for name, c in sorted(per_file.items())},
        "index": {**dataclasses.asdict(index.settings), "n": index.n},
        "items": len(items),
        "benchmarks": [b.name for b in loaded],
        "skipped_benchmarks": skipped,
        "corpora": sizes,
        "machine_files": machine_files,
        "drop_common": DROP_COMMON,
        "dropped_ngrams": sorted(
            ({"ngram": index.row_text(r), "documents": c} for r, c in row_documents.items() if c > DROP_COMMON),
            key=lambda e: -e["documents"],
        ),
        # listed: every flag of the clean and machine corpora, and the related corpora's boilerplate and other ones
        # (copies and template matches of the related datasets are only counted, above: they are what they are)
        "flags": [f for f in flags if f["group"] != "related" or f["category"] not in ("copy", "template")][:LISTED],
    }
    here = Path(__file__).parent
    name = "precision_tokens" if args.tokenizer else "precision"
    if args.letter_share is not None:
        name += f"_letters{args.letter_share:g}"
    if args.n is not None:
        name += f"_n{args.n}"
    (here / f"{name}.json").write_text(json.dumps(summary, indent=2, default=int) + "\n")
    (here / f"{name}.md").write_text(markdown(summary))
    print(markdown(summary))


def markdown(summary: dict) -> str:
    lines = [
        f"Index: {summary['items']:,} items of {len(summary['benchmarks'])} benchmarks "
        f"({', '.join(summary['benchmarks'])}); {summary['index']['unit']}, n = {summary['index']['n']}, letter share "
        f"{summary['index']['letter_share']:g}, otherwise the default settings.",
        "",
        "| corpus | documents | MB | flagged documents | flags | copy | template | boilerplate | other | flags kept "
        f"by --drop-common {summary['drop_common']} (copy / template / boilerplate / other) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for group, size in summary["corpora"].items():
        entry = summary["counts"].get(group, {"flags": {}, "kept_by_drop_common": {}, "flagged_documents": 0})
        count, kept = Counter(entry["flags"]), Counter(entry["kept_by_drop_common"])
        documents = entry["flagged_documents"]
        lines.append(
            f"| {group} | {size['documents']:,} | {size['megabytes']:.1f} | {documents} | {sum(count.values())} | "
            f"{count['copy']} | {count['template']} | {count['boilerplate']} | {count['other']} | "
            f"{kept['copy']} / {kept['template']} / {kept['boilerplate']} / {kept['other']} |"
        )
    machine = summary.get("machine_files")
    if machine:
        lines += [
            "",
            f"The machine corpus: {machine['files']:,} files on the machine this ran on (sha256 over their paths and "
            f"contents {machine['sha256'][:16]}).",
        ]
    categories = ("copy", "template", "boilerplate", "other")
    lines += ["", "Related corpora, per file (flags):", "", "| file | " + " | ".join(categories) + " |"]
    lines += ["|---|" + "---|" * len(categories)]
    lines += [
        f"| {name} | " + " | ".join(str(c.get(k, 0)) for k in categories) + " |"
        for name, c in summary["related_per_file"].items()
    ]
    lines += [
        "",
        (
            f"Every flag of the clean and machine corpora, then the boilerplate and other flags of the related "
            f"corpora (the first {LISTED:,} flags in all):"
        ),
        "",
    ]
    lines += ["| corpus | document | item | category | coverage | most documents of an n-gram | matched n-gram |"]
    lines += ["|---|---|---|---|---|---|---|"]
    for f in summary["flags"]:
        ngram = (f["ngrams"] or [""])[0].replace("|", "/")
        lines.append(
            f"| {f['group']} | {f['document']} | {f['item']} | {f['category']} | {f['coverage']:.2f} | "
            f"{f['most_documents_of_an_ngram']} | {ngram} |"
        )
    dropped = summary["dropped_ngrams"]
    lines += ["", f"N-grams `--drop-common {summary['drop_common']}` leaves out: {len(dropped)}", ""]
    lines += [f"- {d['documents']} documents: {d['ngram']}" for d in dropped[:30]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
