"""Bounded memory on any input (issue 61.5): a line longer than its bound is refused (benchmarks, `--data`, the
audit's and `ngram`'s corpora) or skipped into the rejects (`decontaminate --on-bad-line skip`) before it is held
whole, and the zstd reader returns at most what each read asks for, so a small compressed file of gigabytes without
a line break is a clear error in bounded memory."""

import gzip
import io
import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import run_cli
from jaxcontam.data import load_benchmark, open_corpus
from jaxcontam.data.records import MAX_DOCUMENT_BYTES, MAX_RECORD_BYTES, read_json_records
from jaxcontam.errors import DataError
from jaxcontam.storage import CorruptStream, decompressed


def nul_bomb(path, megabytes: int) -> None:
    """`megabytes` MiB of NULs and no line break, compressed by the suffix of `path` (a few KB for .zst)."""
    block = b"\0" * (1 << 20)
    with open(path, "wb") as raw:
        writer = (
            zstandard.ZstdCompressor().stream_writer(raw)
            if path.suffix == ".zst"
            else gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)
        )
        for _ in range(megabytes):
            writer.write(block)
        writer.close()


@pytest.mark.parametrize("suffix", [".zst", ".gz"])
def test_a_compressed_line_without_end_is_named_not_read_whole(tmp_path, suffix):
    bomb = tmp_path / f"bomb.jsonl{suffix}"
    nul_bomb(bomb, 200)
    assert bomb.stat().st_size < 300_000
    with pytest.raises(
        DataError, match=rf"bomb\.jsonl\{suffix}, line 1: longer than the bound of {MAX_DOCUMENT_BYTES}"
    ):
        open_corpus(bomb)


PEAK_SCRIPT = """
import resource, sys
from jaxcontam.decontam.shards import list_shards, read_records
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
(shard,) = list_shards([sys.argv[1]])
records = list(read_records(shard))
sizes = [r.raw.finish() for r in records]
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(type(records[0]).__name__, records[0].reason, sizes[0], grown)
"""


def test_decontaminates_reader_skips_a_gigabyte_line_in_bounded_memory(tmp_path):
    bomb = tmp_path / "bomb.jsonl.zst"
    nul_bomb(bomb, 1024)
    done = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, bomb], capture_output=True, text=True, check=True)
    kind, *reason, size, grown_kb = done.stdout.split()
    assert kind == "BadLine" and "longer than the bound" in " ".join(reason) and int(size) == 1 << 30
    assert int(grown_kb) < 3 * MAX_DOCUMENT_BYTES // 1024  # a few buffers of the bound, not the gigabyte


def test_decontaminate_skips_an_over_long_line_into_the_rejects_byte_for_byte(shared_data, tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    long_line = json.dumps({"text": "x" * (MAX_DOCUMENT_BYTES + 10)}).encode() + b"\n"
    lines = [json.dumps({"text": f"document {k}"}).encode() + b"\n" for k in range(2)]
    (corpus / "a.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(lines[0] + long_line + lines[1]))
    base = ["decontaminate", "--benchmark", "gsm8k", "--path", shared_data / "gsm8k", "--split", "test"]
    base += ["--corpus", corpus, "--workers", 1]
    code, text = run_cli([*base, "--out", tmp_path / "stop"], capsys)
    assert code != 0 and f"a.jsonl.zst, line 2 (byte {len(lines[0])}): a line longer than the bound" in text
    code, text = run_cli([*base, "--out", tmp_path / "skip", "--on-bad-line", "skip"], capsys)
    assert code == 0 and "2 documents" in text and "1 bad lines" in text
    assert (tmp_path / "skip" / "rejects" / "a.jsonl.zst.rejects").read_bytes() == long_line
    kept = zstandard.ZstdDecompressor().decompressobj().decompress((tmp_path / "skip/cleaned/a.jsonl.zst").read_bytes())
    assert kept == lines[0] + lines[1]


def test_a_benchmark_line_past_the_bound_is_refused_naming_its_file_and_line(tmp_path):
    rows = [{"question": "What is 1 + 1?", "answer": "1 + 1 = 2\n#### 2"}] * 2
    rows.insert(1, {"question": "y" * MAX_RECORD_BYTES, "answer": "#### 1"})
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match=r"test\.jsonl, line 2: longer than the bound"):
        load_benchmark("gsm8k", path=tmp_path, split="test")


def test_a_data_line_past_the_bound_is_refused_before_any_model_is_loaded(tmp_path, capsys):
    data = tmp_path / "texts.txt"
    data.write_text("a short text\n" + "z" * (MAX_RECORD_BYTES + 1) + "\n")
    code, text = run_cli(
        ["score", "--model", tmp_path / "no-model", "--data", data, "--out", tmp_path / "s.jsonl"], capsys
    )
    assert code != 0 and "texts.txt, line 2: longer than the bound" in text


def test_a_json_list_past_its_bound_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr("jaxcontam.data.records.MAX_JSON_LIST_BYTES", 100)
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([{"text": "t" * 200}]))
    with pytest.raises(DataError, match=r"rows\.json: a JSON list longer than 100 characters.*JSON lines"):
        list(read_json_records(path))


frames = st.lists(st.binary(max_size=3000) | st.just(b"\0" * 200_000), min_size=1, max_size=4)


@settings(max_examples=40, deadline=None)
@given(frames, st.integers(0, 4), st.data())
def test_the_zstd_reader_reads_every_frame_and_names_any_cut_inside_one(parts, skippable_at, data):
    """Against the parts compressed: frames with and without checksums and content sizes and a skippable frame,
    read in pieces of any size; a file cut inside a frame is CorruptStream, one cut at a frame's end reads the frames
    before it."""
    frames = [
        (zstandard.ZstdCompressor(write_checksum=k % 2 == 0, write_content_size=k % 3 != 0).compress(part), part)
        for k, part in enumerate(parts)
    ]
    skippable = (0x184D2A5A).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    frames.insert(min(skippable_at, len(frames)), (skippable, b""))
    stream = b"".join(frame for frame, _ in frames)

    def read(blob: bytes) -> bytes:
        handle, pieces = decompressed(io.BytesIO(blob), ".zst", "f.zst"), []
        while piece := handle.read(data.draw(st.integers(1, 70_000), label="read size")):
            pieces.append(piece)
        return b"".join(pieces)

    assert read(stream) == b"".join(parts)
    cut = data.draw(st.integers(0, len(stream)), label="cut")
    end, before = 0, {0: b""}
    for frame, part in frames:
        end += len(frame)
        before[end] = before[end - len(frame)] + part
    if cut in before:
        assert read(stream[:cut]) == before[cut]
    else:
        with pytest.raises(CorruptStream, match="ends inside a frame"):
            read(stream[:cut])


def test_an_npz_member_declaring_more_than_it_holds_is_refused_before_it_is_allocated(tmp_path):
    from jaxcontam.errors import IndexMismatchError
    from jaxcontam.ngram.store import read_npz, write_npz

    path = tmp_path / "counts.npz"
    write_npz(path, {"counts": np.arange(4)}, {"n": 8})
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<i8", "fortran_order": False, "shape": (1 << 40,)})
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("forged.npy", header.getvalue() + b"\0" * 64)
    with pytest.raises(IndexMismatchError, match=r"forged\.npy declares 8796093022208 bytes"):
        read_npz(path)


def test_a_corpus_file_that_is_not_parquet_is_named_not_a_traceback(shared_data, tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "junk.parquet").write_bytes(b"PAR1" + bytes(range(256)) * 8)
    base = ["decontaminate", "--benchmark", "gsm8k", "--path", shared_data / "gsm8k", "--split", "test"]
    code, text = run_cli([*base, "--corpus", corpus, "--workers", 1, "--out", tmp_path / "out"], capsys)
    assert code == 2 and "junk.parquet: not a readable Parquet file" in text and "Traceback" not in text
