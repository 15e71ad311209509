"""GGUF tokenizers built torch-free from the file's metadata, against transformers' own GGUF tokenizer.

The reference is `PreTrainedTokenizerFast.from_pretrained(folder, gguf_file=...)`, transformers' torch path
that reads the file itself. Tiny files are written here with gguf's writer the way llama.cpp's converter lays out
a vocabulary: a SentencePiece BPE ("llama": byte tokens, scores, no merges) and byte-level BPEs ("gpt2": merges)
under several `tokenizer.ggml.pre` split rules. A few ids are also checked by hand.
"""

import json
import subprocess
import sys

import gguf
import pytest
import tokenizers
import transformers as tf

from jaxcontam.errors import DataError, ModelError
from jaxcontam.models.gguf import load_gguf_tokenizer, open_reader
from jaxcontam.ngram.units import load_units

SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEXTS = [
    "the cat sat",
    "The Cat  sat\n\nthe end",
    "héllo wörld 日本語 🤖",
    "it's 12345 cats, 7 hats!",
    "   leading spaces",
    "tabs\tand\r\nnewlines\n",
    "<|im_start|>user\nthe cat<|im_end|>\n",
    "",
]
CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "héllo, what's 12 + 30?"},
    {"role": "assistant", "content": "42"},
    {"role": "user", "content": "and the cat?"},
]
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
NORMAL, UNKNOWN, CONTROL, BYTE = 1, 2, 3, 6  # llama.cpp's token types


def write_tokenizer_gguf(path, model: str, tokens, types, *, scores=None, merges=None, pre=None, **ids):
    """A weightless GGUF file holding only a tokenizer (as llama.cpp's converter writes one) and a chat template."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tokenizer_model(model)
    if pre is not None:
        writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    if scores is not None:
        writer.add_token_scores(scores)
    if merges is not None:
        writer.add_token_merges(merges)
    for name, value in ids.items():
        getattr(writer, f"add_{name}")(value)
    writer.add_chat_template(TEMPLATE)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def spm_file(path):
    """SentencePiece BPE: <unk> <s> </s>, 256 byte tokens, then pieces scored so longer pieces merge later."""
    pieces = [
        "▁",
        "t",
        "h",
        "e",
        "c",
        "a",
        "s",
        "n",
        "d",
        "he",
        "at",
        "▁t",
        "▁c",
        "▁s",
        "▁the",
        "▁cat",
        "▁sat",
        "en",
        "▁en",
        "▁end",
    ]
    tokens = ["<unk>", "<s>", "</s>", *[f"<0x{b:02X}>" for b in range(256)], *pieces, "<|im_start|>", "<|im_end|>"]
    types = [UNKNOWN, CONTROL, CONTROL, *[BYTE] * 256, *[NORMAL] * len(pieces), CONTROL, CONTROL]
    scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))] + [0.0, 0.0]
    write_tokenizer_gguf(path, "llama", tokens, types, scores=scores, bos_token_id=1, eos_token_id=2, unk_token_id=0)
    return tokens


def byte_level_file(path, pre):
    """Byte-level BPE: <|endoftext|>, the 256-character byte alphabet, merged tokens, chat control tokens."""
    merges = ["Ġ t", "h e", "Ġt he", "a t", "Ġ c", "Ġc at", "1 2", "12 3", "4 5", "' s", "Ġ Ġ", "Ċ Ċ"]
    alphabet = sorted(tokenizers.pre_tokenizers.ByteLevel.alphabet())
    merged = [m.replace(" ", "") for m in merges]
    tokens = ["<|endoftext|>", *alphabet, *merged, "<|im_start|>", "<|im_end|>"]
    types = [CONTROL, *[NORMAL] * (len(alphabet) + len(merged)), CONTROL, CONTROL]
    write_tokenizer_gguf(
        path,
        "gpt2",
        tokens,
        types,
        merges=merges,
        pre=pre,
        bos_token_id=0,
        eos_token_id=0,
        unk_token_id=0,
        add_bos_token=False,
    )
    return tokens


def reference_tokenizer(path):
    return tf.PreTrainedTokenizerFast.from_pretrained(str(path.parent), gguf_file=path.name)


def ours(path):
    return load_gguf_tokenizer(open_reader(path), path)


def assert_same_tokenizer(mine, reference, texts):
    for text in texts:
        assert mine(text).input_ids == reference(text).input_ids, text
        assert mine(text, add_special_tokens=False).input_ids == reference(text, add_special_tokens=False).input_ids, (
            text
        )
    for kind in ("bos_token", "eos_token", "unk_token", "pad_token", "chat_template"):
        assert getattr(mine, kind) == getattr(reference, kind), kind
    assert sorted(mine.all_special_tokens) == sorted(reference.all_special_tokens)
    for prompt in (CHAT[:2], CHAT):
        rendered = mine.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
        assert rendered == reference.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
        assert mine(rendered).input_ids == reference(rendered).input_ids


def test_sentencepiece_bpe_matches_transformers(tmp_path):
    tokens = spm_file(tmp_path / "spm.gguf")
    mine = ours(tmp_path / "spm.gguf")
    assert_same_tokenizer(mine, reference_tokenizer(tmp_path / "spm.gguf"), TEXTS)
    ids = mine("the cat é").input_ids  # by hand: BOS, whole-word pieces, a byte-fallback "é" (C3 A9)
    assert [tokens[i] for i in ids] == ["<s>", "▁the", "▁cat", "▁", "<0xC3>", "<0xA9>"]
    assert mine.decode(ids, skip_special_tokens=True) == "the cat é"


@pytest.mark.parametrize("pre", ["default", "smollm", "llama-bpe", "qwen2"])
def test_byte_level_bpe_matches_transformers(pre, tmp_path):
    tokens = byte_level_file(tmp_path / "bpe.gguf", pre)
    mine = ours(tmp_path / "bpe.gguf")
    assert_same_tokenizer(mine, reference_tokenizer(tmp_path / "bpe.gguf"), TEXTS)
    digits = [tokens[i] for i in mine("12345").input_ids]  # GPT-2 keeps digit runs, llama-3 cuts 3s, qwen2 1s
    assert digits == {"llama-bpe": ["123", "45"], "qwen2": ["1", "2", "3", "4", "5"]}.get(pre, ["123", "45"])
    assert mine("<|im_end|>").input_ids == [len(tokens) - 1]


def test_unsupported_tokenizer_model_is_named(tmp_path):
    write_tokenizer_gguf(tmp_path / "m.gguf", "rwkv", ["a", "b"], [NORMAL, NORMAL])
    with pytest.raises(ModelError, match=r"tokenizer model 'rwkv' is not supported \(supported: gpt2, llama"):
        ours(tmp_path / "m.gguf")


def test_special_token_id_outside_the_vocabulary_is_named(tmp_path):
    write_tokenizer_gguf(tmp_path / "m.gguf", "gpt2", ["a", "b"], [NORMAL, NORMAL], merges=[], bos_token_id=7)
    with pytest.raises(ModelError, match=r"m\.gguf: the GGUF tokenizer metadata cannot be converted"):
        ours(tmp_path / "m.gguf")


def test_units_refuse_a_folder_with_two_gguf_files(tmp_path):
    for name in ("a.Q4_0.gguf", "a.Q8_0.gguf"):
        byte_level_file(tmp_path / name, "default")
    with pytest.raises(ModelError, match=r"several GGUF files \(a\.Q4_0\.gguf, a\.Q8_0\.gguf\)"):
        load_units(tmp_path)


def test_units_name_a_folder_without_any_tokenizer(tmp_path):
    """The folder reaches transformers.AutoTokenizer (the loader `load_model` uses too), whose refusal is named."""
    with pytest.raises(DataError, match=r"--tokenizer .*nor a loadable fast Hugging Face tokenizer \(.*AutoTokenizer"):
        load_units(tmp_path)


def test_file_without_tokenizer_gives_none_and_no_units(tmp_path):
    writer = gguf.GGUFWriter(str(tmp_path / "m.gguf"), "llama")
    writer.add_block_count(1)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert ours(tmp_path / "m.gguf") is None
    with pytest.raises(DataError, match="holds no tokenizer"):
        load_units(tmp_path)


def test_truncated_file_is_named(tmp_path):
    spm_file(tmp_path / "spm.gguf")
    data = (tmp_path / "spm.gguf").read_bytes()
    (tmp_path / "cut.gguf").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match=r"cut\.gguf: not a readable GGUF file"):
        open_reader(tmp_path / "cut.gguf")


# --- the real SmolLM2 file: transformers' torch-path tokenizer as reference, and a run with torch blocked ---


@pytest.fixture(scope="module")
def smollm2_file(shared_data):
    return shared_data / "smollm2_135m_instruct" / SMOLLM2


@pytest.fixture(scope="module")
def gsm8k_questions(shared_data):
    lines = (shared_data / "gsm8k" / "test.jsonl").read_text().splitlines()[:40]
    return [json.loads(line)["question"] for line in lines]


def test_smollm2_tokenizer_matches_transformers(smollm2_file, gsm8k_questions):
    mine, reference = ours(smollm2_file), reference_tokenizer(smollm2_file)
    assert_same_tokenizer(mine, reference, TEXTS + gsm8k_questions)
    messages = [{"role": "user", "content": question} for question in gsm8k_questions[:3]]
    rendered = mine.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert mine(rendered).input_ids == reference(rendered).input_ids
    assert mine.convert_ids_to_tokens(mine(rendered).input_ids[:1]) == ["<|im_start|>"]


def test_smollm2_units_are_the_model_tokens(smollm2_file, gsm8k_questions):
    units = load_units(smollm2_file.parent)  # the folder holding the .gguf, as an audit's default tokenizer
    reference = reference_tokenizer(smollm2_file)
    encoded = units.encode_batch(gsm8k_questions[:8])
    assert [list(ids) for ids in encoded] == [
        reference(q, add_special_tokens=False).input_ids for q in gsm8k_questions[:8]
    ]
    assert units.sha256 == load_units(smollm2_file).sha256


_TORCH_BLOCKED = """
import json, pathlib, sys
sys.modules["torch"] = None  # any `import torch` now raises ImportError
from jaxcontam.models.gguf import load_gguf_tokenizer, open_reader
from jaxcontam.ngram.units import load_units
path = pathlib.Path(sys.argv[1])
tokenizer = load_gguf_tokenizer(open_reader(path), path)
prompt = tokenizer.apply_chat_template([{"role": "user", "content": sys.argv[2]}], add_generation_prompt=True,
                                       tokenize=False)
units = load_units(path)
print(json.dumps({"chat": tokenizer(prompt).input_ids, "units": units.encode_batch([sys.argv[2]])[0].tolist()}))
"""


def test_smollm2_tokenizer_loads_with_torch_blocked(smollm2_file, gsm8k_questions):
    question = gsm8k_questions[0]
    run = subprocess.run(
        [sys.executable, "-c", _TORCH_BLOCKED, str(smollm2_file), question], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    reference = reference_tokenizer(smollm2_file)
    prompt = reference.apply_chat_template(
        [{"role": "user", "content": question}], add_generation_prompt=True, tokenize=False
    )
    assert got == {
        "chat": reference(prompt).input_ids,
        "units": reference(question, add_special_tokens=False).input_ids,
    }
