"""GGUF checkpoints: every quantisation type, every llama-style family, the real SmolLM2 file, and stop ids.

Tiny GGUF files are written here from torch transformers models the way llama.cpp's convert_hf_to_gguf.py writes
them (its tensor names, its q/k row permutation for llama, its +1 on gemma norm weights); the loaded model must
then give the torch model's log-probs. Dequantised values are checked against the `gguf` package's own
`dequantize`, the reference implementation of the block formats.
"""

import dataclasses
import json

import gguf
import numpy as np
import pytest
import tokenizers
import torch
import transformers as tf

import jaxcontam
from gguf_writer import write_gguf
from helpers import SMOLLM2_FOLDER, SMOLLM2_GGUF, torch_smollm2
from jaxcontam.engine import generate
from jaxcontam.errors import ModelError
from jaxcontam.models.gguf import QUANT_TYPES
from jaxcontam.models.stop_ids import end_of_turn_id

SEQS = [[5, 9, 3, 60, 2, 17, 33], [1, 2], [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]]

SMALL = {
    "vocab_size": 96,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 64,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
FAMILIES = {
    "llama": (tf.LlamaConfig, tf.LlamaForCausalLM, {"tie_word_embeddings": False, "rope_theta": 500.0}),
    "llama_tied": (tf.LlamaConfig, tf.LlamaForCausalLM, {"tie_word_embeddings": True}),
    "qwen2": (tf.Qwen2Config, tf.Qwen2ForCausalLM, {"tie_word_embeddings": False}),
    "qwen3": (tf.Qwen3Config, tf.Qwen3ForCausalLM, {"tie_word_embeddings": True}),
    "gemma": (tf.GemmaConfig, tf.GemmaForCausalLM, {}),
    "gemma2": (
        tf.Gemma2Config,
        tf.Gemma2ForCausalLM,
        {
            "query_pre_attn_scalar": 16,
            "sliding_window": 4,
            "attn_logit_softcapping": 30.0,
            "final_logit_softcapping": 20.0,
        },
    ),
    "gemma3": (
        tf.Gemma3TextConfig,
        tf.Gemma3ForCausalLM,
        {
            "query_pre_attn_scalar": 16,
            "sliding_window": 4,
            "layer_types": ["sliding_attention", "full_attention"],
            "rope_parameters": {
                "full_attention": {"rope_type": "default", "rope_theta": 50000.0},
                "sliding_attention": {"rope_type": "default", "rope_theta": 300.0},
            },
        },
    ),
    "olmo2": (tf.Olmo2Config, tf.Olmo2ForCausalLM, {"pad_token_id": None}),
    "phi3": (tf.Phi3Config, tf.Phi3ForCausalLM, {"pad_token_id": None, "sliding_window": 5}),
    "mixtral": (tf.MixtralConfig, tf.MixtralForCausalLM, {"num_local_experts": 4, "num_experts_per_tok": 2}),
    "qwen3_moe": (
        tf.Qwen3MoeConfig,
        tf.Qwen3MoeForCausalLM,
        {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "norm_topk_prob": True},
    ),
    "phi3_longrope": (
        tf.Phi3Config,
        tf.Phi3ForCausalLM,
        {
            "pad_token_id": None,
            "max_position_embeddings": 256,
            "original_max_position_embeddings": 8,
            "rope_parameters": {
                "rope_type": "longrope",
                "rope_theta": 10000.0,
                "short_factor": [1.0 + i for i in range(8)],
                "long_factor": [3.0 + 2 * i for i in range(8)],
            },
        },
    ),
}


def torch_model(family: str, **overrides):
    config_cls, model_cls, extra = FAMILIES[family]
    torch.manual_seed(0)
    config = config_cls(**{**SMALL, **extra, **overrides})
    model = model_cls(config).eval()
    with torch.no_grad():  # visible norm weights, so a missing norm offset or a skipped norm would show
        for name, param in model.named_parameters():
            if "norm" in name:
                param.copy_(torch.randn_like(param) * 0.3)
    return model


def torch_logprobs(model, seqs):
    out = []
    with torch.no_grad():
        for seq in seqs:
            logits = model(torch.tensor([seq])).logits[0].float()
            logp = torch.log_softmax(logits, dim=-1)
            out.append(logp[:-1].gather(1, torch.tensor(seq[1:])[:, None])[:, 0].numpy())
    return out


def assert_logprobs_close(ours, reference, atol):
    for a, b in zip(ours, reference, strict=True):
        np.testing.assert_allclose(a, b, atol=atol, rtol=0)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_round_trip_matches_torch(family, tmp_path):
    model = torch_model(family)
    model_type = {"llama_tied": "llama", "phi3_longrope": "phi3", "gemma3": "gemma3_text"}.get(family, family)
    arch = {"gemma3_text": "gemma3", "mixtral": "llama", "qwen3_moe": "qwen3moe"}.get(model_type, model_type)
    write_gguf(tmp_path / "model.gguf", model, arch)
    loaded = jaxcontam.load_model(tmp_path)  # a folder holding one .gguf
    assert loaded.config.model_type == model_type and loaded.tokenizer is None
    assert loaded.config.layer_windows == {"gemma2": (4, 0), "gemma3": (4, 0), "phi3": (5, 5)}.get(family, (0, 0))
    if family == "phi3_longrope":  # the 11-token sequence outgrows the original 8 positions: the long factors
        assert loaded.config.rope.scaling == "longrope" and loaded.config.rope.long_factor[1] == 5.0
    assert loaded.config.tie_word_embeddings == model.config.tie_word_embeddings
    assert loaded.config.eos_token_ids == (2, 5)
    assert_logprobs_close(loaded.logprobs(SEQS), torch_logprobs(model, SEQS), atol=1e-5)


@pytest.mark.parametrize("qtype", QUANT_TYPES)
def test_every_quant_type_loads_the_dequantised_model(qtype, tmp_path):
    # K-quant blocks span 256 values of a row: every matrix's input dimension is a multiple of 256
    model = torch_model("llama", hidden_size=256, intermediate_size=256, head_dim=64, vocab_size=64)
    reference = {k: v.clone() for k, v in model.state_dict().items()}
    kind = gguf.GGMLQuantizationType[qtype]
    write_gguf(tmp_path / "q.gguf", model, "llama", kind)
    if qtype not in ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"):  # a real quantisation: close to the original
        tolerance = {"F32": 0, "F16": 1e-3, "BF16": 1e-2, "Q8_0": 2e-2}.get(qtype, 0.3)
        for name, value in model.state_dict().items():
            np.testing.assert_allclose(value.numpy(), reference[name].numpy(), atol=tolerance)
    loaded = jaxcontam.load_model(tmp_path / "q.gguf")
    up = model.model.layers[1].mlp.up_proj.weight.detach().numpy()
    np.testing.assert_array_equal(np.asarray(loaded.params["layers"]["w_up"][1]), up.T)
    assert_logprobs_close(loaded.logprobs(SEQS), torch_logprobs(model, SEQS), atol=1e-4)


def test_unpermuted_query_rows_are_the_hf_rows(tmp_path):
    model = torch_model("llama")
    write_gguf(tmp_path / "m.gguf", model, "llama")
    loaded = jaxcontam.load_model(tmp_path / "m.gguf", dtype="bfloat16")
    q = model.model.layers[0].self_attn.q_proj.weight.detach().numpy()  # [H*Dh, D] -> ours [D, H, Dh]
    ours = np.asarray(loaded.params["layers"]["wq"][0], np.float32)
    np.testing.assert_allclose(ours, q.reshape(4, 16, 64).transpose(2, 0, 1), rtol=1e-2, atol=1e-2)


def test_unsupported_quant_type_is_named(tmp_path):
    model = torch_model("llama", hidden_size=256, intermediate_size=256, head_dim=64, vocab_size=64)
    write_gguf(tmp_path / "m.gguf", model, "llama", gguf.GGMLQuantizationType.TQ2_0)
    with pytest.raises(
        ModelError,
        match=r"stored as TQ2_0.*supported types: F32, F16, BF16, Q8_0, Q4_0, Q4_1.*"
        r"Q4_K, Q5_K, Q6_K",
    ):
        jaxcontam.load_model(tmp_path / "m.gguf")


def write_stub_gguf(path, arch: str, **metadata) -> None:
    """A GGUF file with one tensor and the given uint32 metadata: enough for the architecture checks."""
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(1)
    for key, value in metadata.items():
        writer.add_uint32(f"{arch}.{key}", value)
    writer.add_tensor("token_embd.weight", np.zeros((8, 4), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_unsupported_architecture_is_named(tmp_path):
    write_stub_gguf(tmp_path / "m.gguf", "mamba")
    with pytest.raises(
        ModelError,
        match=r"architecture 'mamba' is not supported.*gemma, gemma2, gemma3, llama, olmo2, phi3, qwen2, qwen3, "
        r"qwen3moe",
    ):
        jaxcontam.load_model(tmp_path)


def test_experts_of_an_unsupported_family_are_named(tmp_path):
    write_stub_gguf(tmp_path / "m.gguf", "qwen2", expert_count=8)
    with pytest.raises(
        ModelError, match=r"qwen2 GGUF file with 8 experts.*llama \(mixtral\), qwen3moe \(qwen3_moe\) only"
    ):
        jaxcontam.load_model(tmp_path)


def test_two_gguf_files_in_a_folder_are_named(tmp_path):
    for name in ("a.Q4_0.gguf", "a.Q8_0.gguf"):
        (tmp_path / name).write_bytes(b"GGUF")
    with pytest.raises(ModelError, match=r"several GGUF files \(a\.Q4_0\.gguf, a\.Q8_0\.gguf\)"):
        jaxcontam.load_model(tmp_path)


def test_hf_folder_collects_every_stop_id(tmp_path):
    """Llama-3 style: config.json lists one eos, generation_config.json two, the template ends turns with a third."""
    model = torch_model("llama")
    model.config.eos_token_id = 2
    model.save_pretrained(tmp_path)
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [2, 6]}))
    vocab = {f"t{i}": i for i in range(90)}
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="t0"))
    tokenizer = tf.PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|end_of_text|>")
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|eot_id|>", "<|end_of_text|>"]})
    tokenizer.chat_template = (
        "{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
        "{{ m['content'] }}<|eot_id|>{% endfor %}"
    )
    tokenizer.save_pretrained(tmp_path)
    eot, end = tokenizer.convert_tokens_to_ids(["<|eot_id|>", "<|end_of_text|>"])
    loaded = jaxcontam.load_model(tmp_path)
    assert loaded.config.eos_token_ids == (2, 6, end, eot)
    assert loaded.config.eos_token_id == (2, 6, end, eot)


def test_generation_stops_on_any_of_several_eos_ids(tmp_path):
    model = torch_model("llama")
    write_gguf(tmp_path / "m.gguf", model, "llama")
    loaded = jaxcontam.load_model(tmp_path / "m.gguf")
    free = generate(loaded, [[1, 9, 4]], max_new_tokens=8, stop_token_ids=[])[0].token_ids
    stop = free[3]
    first = free.index(stop)
    other = next(i for i in range(90, 96) if i not in free)
    loaded.config = dataclasses.replace(loaded.config, eos_token_id=(other, stop))
    stopped = generate(loaded, [[1, 9, 4]], max_new_tokens=8)[0]
    assert stopped.token_ids == free[:first] and stopped.finish_reason == "stop_token"


# --- the real SmolLM2-135M-Instruct Q4_1 file against a torch transformers model of the same file ---


@pytest.fixture(scope="module")
def smollm2(shared_data):
    """One load of each model for every SmolLM2 test; torch on one thread (beside JAX's pool it runs ~3x faster)."""
    ours = jaxcontam.load_model(shared_data / "smollm2_135m_instruct")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield ours, torch_smollm2(shared_data / SMOLLM2_FOLDER / SMOLLM2_GGUF)
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def gsm8k_texts(shared_data):
    lines = (shared_data / "gsm8k" / "test.jsonl").read_text().splitlines()[:4]
    return [f"Question: {row['question']}\nAnswer: {row['answer']}" for row in map(json.loads, lines)]


def test_smollm2_logprobs_match_torch(smollm2, gsm8k_texts):
    ours, reference = smollm2
    seqs = [ours.tokenizer(text).input_ids for text in gsm8k_texts]
    mine, theirs = ours.logprobs(seqs), torch_logprobs(reference, seqs)
    assert max(float(np.abs(a - b).max()) for a, b in zip(mine, theirs, strict=True)) <= 1e-4
    assert -3.0 < float(np.mean(np.concatenate(mine))) < -1.0  # a trained model, not noise


def test_smollm2_greedy_generation_matches_torch(smollm2, gsm8k_texts):
    ours, reference = smollm2
    messages = [{"role": "user", "content": gsm8k_texts[1].split("\nAnswer:")[0]}]
    prompt = ours.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = ours.tokenizer(prompt).input_ids
    mine = generate(ours, [ids], max_new_tokens=32, rows_per_batch=1)[0].token_ids  # one row, not 16 padded
    with torch.no_grad():
        out = reference.generate(
            torch.tensor([ids]), max_new_tokens=32, do_sample=False, eos_token_id=2, pad_token_id=2
        )
    theirs = out[0, len(ids) :].tolist()
    assert len(mine) == 32 and mine == theirs


def test_smollm2_stop_ids_and_chat_template(smollm2):
    ours, _ = smollm2
    im_end = ours.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert im_end in ours.config.eos_token_ids
    assert end_of_turn_id(ours.tokenizer) == im_end
    assert "<|im_start|>" in ours.tokenizer.chat_template
    assert ours.config.num_layers == 30 and ours.config.num_kv_heads == 3 and ours.config.tie_word_embeddings


def test_smollm2_chat_ptrue_matches_torch(smollm2):
    """P(True) of a real instruct model in its chat template: the judge request is the user's turn, the reply opens
    with "The proposed answer is:", and the words " True" / " False" are read from torch's next-token softmax there
    (each one token after the cue in SmolLM2's vocabulary)."""
    from jaxcontam.engine.ptrue import p_true

    ours, reference = smollm2
    tokenizer = ours.tokenizer
    pairs = [
        ("What is the capital of France?", "Paris"),
        ("What is the capital of France?", "Berlin"),
        ("How many legs does a spider have?", "Eight"),
    ]
    found = p_true(ours, [q for q, _ in pairs], [a for _, a in pairs], chat="auto")
    for i, (question, answer) in enumerate(pairs):
        request = f"Question: {question}\nProposed Answer: {answer}\nIs the proposed answer True or False?"
        text = (
            tokenizer.apply_chat_template(
                [{"role": "user", "content": request}], tokenize=False, add_generation_prompt=True
            )
            + "The proposed answer is:"
        )
        ids = tokenizer.encode(text, add_special_tokens=False)
        assert text.startswith("<|im_start|>")
        true_id, false_id = (tokenizer.encode(text + word, add_special_tokens=False) for word in (" True", " False"))
        assert true_id[:-1] == false_id[:-1] == ids  # one token each after the cue
        with torch.inference_mode():
            logp = torch.log_softmax(reference(torch.tensor([ids])).logits[0, -1].double(), -1)
        p_t, p_f = float(logp[true_id[-1]].exp()), float(logp[false_id[-1]].exp())
        assert abs(found.p_true[i] - p_t) <= 1e-4 and abs(found.p_false[i] - p_f) <= 1e-4
        assert abs(found.normalised[i] - p_t / (p_t + p_f)) <= 1e-4


def test_smollm2_chat_answer_ends_at_end_of_turn(smollm2):
    """Asked in its chat template, the instruct model answers and closes its turn with <|im_end|>."""
    from jaxcontam.engine.chat import chat_text, encode_chat

    ours, _ = smollm2
    text = chat_text(ours.tokenizer, "What is the capital of France? Answer in one word.", "auto")
    (answer,) = generate(
        ours, [encode_chat(ours.tokenizer, text, "auto")], max_new_tokens=24, stop_token_ids=ours.config.eos_token_ids
    )
    assert answer.finish_reason == "stop_token" and "Paris" in answer.text
