"""The real pretrained stories260K (llama2.c) converted to a Hugging Face directory and run through jaxcontam."""

import json
import struct

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import transformers as tf

import jaxcontam
import jaxcontam.models as M
from jaxcontam.cli import main
from jaxcontam.errors import ModelError
from jaxcontam.models.llama2c import convert_llama2c

STORY = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park."


@pytest.fixture(scope="module")
def stories(shared_data, tmp_path_factory):
    folder = shared_data / "tiny_lm_stories260K"
    out = tmp_path_factory.mktemp("stories260K")
    main(["convert-llama2c", str(folder / "stories260K.bin"), str(folder / "tok512.bin"), str(out)])
    return folder, out, jaxcontam.load_model(out)


def llama2c_encode(text: str, pieces: list[tuple[bytes, float]]) -> list[int]:
    """run.c's encode(): dummy " " prefix, per-codepoint lookup with byte fallback (+3), best-score pair merges."""
    lookup = {p: i for i, (p, _) in enumerate(pieces)}
    tokens = [lookup[b" "]] if text else []
    for ch in text:
        raw = ch.encode()
        tokens += [lookup[raw]] if raw in lookup else [b + 3 for b in raw]
    while True:
        best, best_score = None, -1e10
        for i in range(len(tokens) - 1):
            merged = lookup.get(pieces[tokens[i]][0] + pieces[tokens[i + 1]][0])
            if merged is not None and pieces[merged][1] > best_score:
                best, best_score = i, pieces[merged][1]
        if best is None:
            return tokens
        tokens[best : best + 2] = [lookup[pieces[tokens[best]][0] + pieces[tokens[best + 1]][0]]]


def read_pieces(path) -> list[tuple[bytes, float]]:
    data = path.read_bytes()
    pieces, offset = [], 4
    while offset < len(data):
        score, length = struct.unpack_from("<fi", data, offset)
        pieces.append((data[offset + 8 : offset + 8 + length], score))
        offset += 8 + length
    return pieces


def test_converted_directory_is_a_hf_llama(stories):
    _, out, model = stories
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in out.iterdir()}
    assert json.loads((out / "config.json").read_text())["model_type"] == "llama"
    assert (model.config.num_layers, model.config.num_heads, model.config.num_kv_heads) == (5, 8, 4)
    assert model.config.vocab_size == 512 and model.config.tie_word_embeddings


def test_tokenizer_reproduces_llama2c_encoding(stories, shared_data):
    folder, _, model = stories
    pieces = read_pieces(folder / "tok512.bin")
    texts = [STORY, "  two  spaces,\ttab and a newline\nhere", "émigré naïve café — 3.14", ""]
    for line in (shared_data / "copa" / "copa_dev.jsonl").read_text().splitlines()[:20]:
        texts.append(json.loads(line)["premise"])
    for line in (shared_data / "xcopa" / "data" / "et" / "val.et.jsonl").read_text().splitlines()[:10]:
        texts.append(json.loads(line)["premise"])  # Estonian: exercises byte fallback
    for text in texts:
        assert model.tokenizer.encode(text) == [1] + llama2c_encode(text, pieces), text
        assert model.tokenizer.decode(model.tokenizer.encode(text), skip_special_tokens=True) == text


def test_greedy_decoding_from_bos_tells_the_story(stories):
    _, _, model = stories
    spec = model.config
    step = jax.jit(M.decode, static_argnums=1)
    cache = M.init_cache(spec, 1, 48, jnp.float32)
    tokens = [spec.bos_token_id]
    for t in range(40):
        hidden, cache = step(
            model.params, spec, jnp.array([[tokens[-1]]], jnp.int32), jnp.array([[t]], jnp.int32), cache, t
        )
        tokens.append(int(jnp.argmax(M.logits_from_hidden(model.params, spec, hidden[:, -1])[0])))
    assert model.tokenizer.decode(tokens, skip_special_tokens=True).startswith(STORY)


def test_logprobs_match_torch_llama(stories):
    _, out, model = stories
    reference = tf.LlamaForCausalLM.from_pretrained(out).eval()
    seqs = [
        model.tokenizer.encode(STORY),
        model.tokenizer.encode("The cat sat on the mat. It was happy."),
        model.tokenizer.encode("Tom"),
    ]
    for seq, got in zip(seqs, model.logprobs(seqs), strict=True):
        with torch.no_grad():
            logp = torch.log_softmax(reference(torch.tensor([seq])).logits[0].double(), -1)
        np.testing.assert_allclose(
            got, logp[torch.arange(len(seq) - 1), torch.tensor(seq[1:])].numpy(), atol=1e-4, rtol=0
        )


def test_truncated_model_file_is_refused(stories, tmp_path):
    folder, _, _ = stories
    broken = tmp_path / "broken.bin"
    broken.write_bytes((folder / "stories260K.bin").read_bytes()[:5000])
    with pytest.raises(ModelError, match="broken.bin.*bytes.*implies"):
        convert_llama2c(broken, folder / "tok512.bin", tmp_path / "out")
