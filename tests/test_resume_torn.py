"""A resume survives any number of kills: a state line torn by a kill is cut off before the next is appended, so the
run after the resumed one can still read its state (issue 61.6). Kills are simulated deterministically: the state
file is cut in the middle of its last line, as a kill during that write leaves it."""

import json

import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import run_cli, small_toml, without_timings
from jaxcontam.audit.store import StageStore, run_chunked
from jaxcontam.storage.appends import append_line, complete_lines


def tear_last_line(path, keep: float = 0.5) -> None:
    """Cut `path` inside its last line, as a kill while that line was written leaves it."""
    data = path.read_bytes()
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    path.write_bytes(data[: start + max(1, int((len(data) - start) * keep))])


def test_a_stage_killed_twice_mid_write_resumes_to_the_records_of_an_uninterrupted_run(tmp_path):
    items = list(range(10))

    def compute(chunk):
        return [{"x": x, "square": x * x} for x in chunk]

    expected = run_chunked(StageStore(tmp_path / "once", "stage", {"k": 1}), items, 3, compute)
    root = tmp_path / "killed"
    store = StageStore(root, "stage", {"k": 1})
    run_chunked(store, items[:6], 3, compute)  # two chunks, the second's line torn by a kill
    tear_last_line(store.path)
    calls: list[list[int]] = []
    counted = lambda chunk: calls.append(list(chunk)) or compute(chunk)  # noqa: E731
    run_chunked(StageStore(root, "stage", {"k": 1}), items[:9], 3, counted)  # redoes chunk 1, adds chunk 2 ...
    tear_last_line(store.path)  # ... and is killed while writing chunk 2
    assert calls == [[3, 4, 5], [6, 7, 8]]
    records = run_chunked(StageStore(root, "stage", {"k": 1}), items, 3, counted)
    assert records == expected
    assert calls[2:] == [[6, 7, 8], [9]]  # the torn chunk again, then the last one
    lines = store.path.read_text().splitlines()  # whole lines only, one per chunk
    assert [json.loads(line)["chunk"] for line in lines] == [0, 1, 2, 3]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(alphabet='ab{}",: ', max_size=12), min_size=1, max_size=6), st.integers(0, 200))
def test_append_line_cuts_any_torn_tail_and_keeps_every_whole_line(tmp_path_factory, lines, cut):
    path = tmp_path_factory.mktemp("append") / "state.jsonl"
    records = [json.dumps({"line": text}) for text in lines]
    for record in records[:-1]:
        append_line(path, record)
    whole = path.read_bytes() if path.exists() else b""
    torn = whole + records[-1].encode()[: cut % (len(records[-1]) + 1)]  # a kill during the last write
    path.write_bytes(torn)
    assert complete_lines(path.read_text()) == records[:-1]  # the reader ignores the torn tail
    append_line(path, records[-1])
    assert path.read_text().splitlines() == records


def test_an_audit_killed_twice_while_writing_its_state_resumes_to_identical_outputs(tmp_path, capsys):
    once = tmp_path / "once"
    once.mkdir()
    code, printed = run_cli(["pacost", "--config", small_toml(once, exchangeability=False)], capsys)
    assert code == 0, printed
    killed = tmp_path / "killed"
    killed.mkdir()
    config = small_toml(killed, exchangeability=False)
    code, printed = run_cli(["pacost", "--config", config], capsys)
    assert code == 0, printed
    states = sorted((killed / "out" / "state").glob("*.jsonl"))
    assert states
    for kill in range(2):  # killed while its last chunk's line was written, twice over
        for state in states:
            tear_last_line(state, keep=0.3 + 0.4 * kill)
        (killed / "out" / "summary.json").unlink()
        code, printed = run_cli(["pacost", "--config", config], capsys)
        assert code == 0, printed
        assert "corrupted" not in printed
    resumed, uninterrupted = (json.loads((f / "out" / "summary.json").read_text()) for f in (killed, once))
    assert without_timings(resumed) == without_timings(uninterrupted)
    assert pq.read_table(killed / "out" / "items.parquet").equals(pq.read_table(once / "out" / "items.parquet"))
    for state in states:
        assert all(json.loads(line) for line in state.read_text().splitlines())
