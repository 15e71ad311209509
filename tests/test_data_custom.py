"""Local JSONL/CSV/Parquet benchmarks through a field mapping, and the errors for bad input."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jaxcontam.data import load_benchmark
from jaxcontam.errors import DataError


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_with_mapping_reads_choices_answers_and_ids(tmp_path):
    file = write_jsonl(
        tmp_path / "quiz.jsonl",
        [
            {"key": "a1", "prompt": "2+2?", "opts": ["3", "4"], "gold": "B", "passage": "Arithmetic."},
            {"key": "a2", "prompt": "3+3?", "opts": ["six", "seven"], "gold": "six", "passage": "More."},
            {"key": "a3", "prompt": "1+0?", "opts": ["0", "1"], "gold": 1, "passage": "Last."},
        ],
    )
    bench = load_benchmark(
        str(file), fields={"question": "prompt", "choices": "opts", "answer": "gold", "context": "passage", "id": "key"}
    )
    assert (bench.name, bench.split) == ("quiz", "test")
    assert [(i.id, i.answer) for i in bench] == [("quiz/test/a1", 1), ("quiz/test/a2", 0), ("quiz/test/a3", 1)]
    assert bench.prompt(bench[0]) == "Arithmetic.\nQuestion: 2+2?\nA. 3\nB. 4\nAnswer:"


def test_csv_choice_columns_and_parquet_generative(tmp_path):
    csv_file = tmp_path / "mc.csv"
    csv_file.write_text("q,opa,opb,opc,ans\nWhich?,x,y,z,2\n", encoding="utf-8")
    item = load_benchmark(str(csv_file), fields={"question": "q", "choices": "opa,opb,opc", "answer": "ans"})[0]
    assert (item.choices, item.answer, item.id) == (("x", "y", "z"), 2, "mc/test/0")
    parquet_file = tmp_path / "gen.parquet"
    pq.write_table(pa.table({"question": ["Capital of France?"], "answer": [["Paris", "paris city"]]}), parquet_file)
    bench = load_benchmark(str(parquet_file), split="dev")
    assert (bench[0].id, bench[0].answer, bench[0].meta["answers"]) == ("gen/dev/0", "Paris", ["Paris", "paris city"])


def test_mapping_on_a_registered_name_keeps_its_prompt_and_scorer(tmp_path):
    file = write_jsonl(tmp_path / "mine.jsonl", [{"q": "Tom has 2 apples and buys 3. How many?", "a": "5"}])
    bench = load_benchmark("gsm8k", path=file, fields={"question": "q", "answer": "a"})
    assert bench.name == "gsm8k" and bench[0].id == "gsm8k/test/0"
    assert bench.prompt(bench[0]).startswith("Question: Tom") and bench.score(bench[0], "He has $5.") == 1.0


# One test per kind of bad input: each error names the file, the line and what was expected.


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="unknown benchmark 'nope.jsonl' and no such file"):
        load_benchmark("nope.jsonl")
    with pytest.raises(DataError, match=r"--path .*missing does not exist"):
        load_benchmark("gsm8k", path=tmp_path / "missing")
    with pytest.raises(DataError, match=r"holds no gsm8k/test.jsonl"):
        load_benchmark("gsm8k", path=tmp_path)


def test_missing_field_names_file_line_and_fields_present(tmp_path):
    file = write_jsonl(tmp_path / "d.jsonl", [{"question": "ok?", "answer": "y"}, {"question": "no answer?"}])
    with pytest.raises(DataError, match=r"d\.jsonl, line 2: missing field 'answer' .*fields present: question"):
        load_benchmark(str(file))
    with pytest.raises(DataError, match=r"line 1: missing field 'text'"):
        load_benchmark(str(file), fields={"question": "text"})
    with pytest.raises(DataError, match="unknown field mapping key"):
        load_benchmark(str(file), fields={"prompt": "question"})


def test_empty_question(tmp_path):
    file = write_jsonl(tmp_path / "d.jsonl", [{"question": "fine", "answer": "1"}, {"question": "  ", "answer": "2"}])
    with pytest.raises(DataError, match=r"d\.jsonl, line 2: field 'question' must be a non-empty string"):
        load_benchmark(str(file))


def test_answer_index_out_of_range(tmp_path):
    file = tmp_path / "mc.csv"
    file.write_text("question,a,b,answer\nfirst,x,y,1\nsecond,x,y,7\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"mc\.csv, line 3: .*answer index 7 is out of range for 2 choices"):
        load_benchmark(str(file), fields={"choices": "a,b"})
    with pytest.raises(DataError, match=r"line 2: field 'answer' = 'z' is neither"):
        file.write_text("question,a,b,answer\nfirst,x,y,z\n", encoding="utf-8")
        load_benchmark(str(file), fields={"choices": "a,b"})


def test_non_utf8_text(tmp_path):
    file = tmp_path / "d.jsonl"
    file.write_bytes(b'{"question": "ok", "answer": "1"}\n{"question": "caf\xe9", "answer": "2"}\n')
    with pytest.raises(DataError, match=r"d\.jsonl, line 2: not valid UTF-8 .*re-encode"):
        load_benchmark(str(file))


def test_invalid_json_line(tmp_path):
    file = tmp_path / "d.jsonl"
    file.write_text('{"question": "ok", "answer": "1"}\n{"question": \n', encoding="utf-8")
    with pytest.raises(DataError, match=r"d\.jsonl, line 2: not valid JSON"):
        load_benchmark(str(file))


def test_duplicate_ids_name_both_lines(tmp_path):
    file = write_jsonl(
        tmp_path / "d.jsonl",
        [
            {"id": 1, "question": "a", "answer": "x"},
            {"id": 2, "question": "b", "answer": "y"},
            {"id": 1, "question": "c", "answer": "z"},
        ],
    )
    expected = r"d\.jsonl, line 3: duplicate item id 'd/test/1' .*first at .*d\.jsonl, line 1"
    with pytest.raises(DataError, match=expected):
        load_benchmark(str(file), fields={"id": "id"})


def test_bad_rows_in_a_builtin_layout_name_the_line(tmp_path):
    folder = tmp_path / "gsm8k"
    folder.mkdir()
    write_jsonl(folder / "test.jsonl", [{"question": "q", "answer": "no final line"}])
    with pytest.raises(DataError, match=r"test\.jsonl, line 1: GSM8K answer has no '#### <number>'"):
        load_benchmark("gsm8k", path=tmp_path)
    write_jsonl(
        folder / "test.jsonl",
        [{"id": 501, "premise": "p", "choice1": "a", "choice2": "b", "question": "cause", "label": 2}],
    )
    with pytest.raises(DataError, match=r"test\.jsonl, line 1: .*answer index 2 is out of range"):
        load_benchmark("copa", split="test", path=folder / "test.jsonl")


def test_negative_limit_is_refused(tmp_path):
    file = write_jsonl(tmp_path / "d.jsonl", [{"question": "a", "answer": "x"}])
    with pytest.raises(DataError, match="limit must be a non-negative"):
        load_benchmark(str(file), limit=-1)
