"""Engine vs torch transformers on tiny random checkpoints: log-probs, greedy tokens, P(True)."""

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, pre_tokenizers
from tokenizers import models as tok_models
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

import jaxcontam
from jaxcontam.engine.generation import generate
from jaxcontam.engine.ptrue import JudgeTemplate, p_true
from jaxcontam.engine.scoring import score_logprobs

WORDS = [
    "Question",
    "Answer",
    "Is",
    "the",
    "above",
    "answer",
    "correct",
    "?",
    "Please",
    "Yes",
    "or",
    "No",
    ".",
    "Judgement",
    ":",
    "What",
    "is",
    "2",
    "+",
    "4",
    "Paris",
    "capital",
    "of",
    "France",
]
YES_NO = JudgeTemplate(
    "yes-no",
    "Question: {question}\nAnswer: {answer}\nIs the above answer correct? Please answer Yes or No.\nJudgement:",
    (" Yes",),
    (" No",),
)


def word_tokenizer():
    vocab = {"[UNK]": 0, "<s>": 1, "</s>": 2, **{w: i + 3 for i, w in enumerate(dict.fromkeys(WORDS))}}
    tok = Tokenizer(tok_models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", bos_token="<s>", eos_token="</s>")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    config = LlamaConfig(
        vocab_size=96,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    reference = LlamaForCausalLM(config).eval()
    reference.save_pretrained(path)
    word_tokenizer().save_pretrained(path)
    return path, reference


def torch_logprobs(reference, seq):
    with torch.no_grad():
        logits = reference(torch.tensor([seq])).logits[0].double()
    return torch.log_softmax(logits, -1)[torch.arange(len(seq) - 1), torch.tensor(seq[1:])].numpy()


def test_logprobs_match_torch(checkpoint):
    path, reference = checkpoint
    model = jaxcontam.load_model(str(path))
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 96, size=rng.integers(2, 70)).tolist() for _ in range(9)]
    scores = score_logprobs(model, seqs, rows_per_batch=2, buckets=(32, 128))
    for seq, s in zip(seqs, scores):
        np.testing.assert_allclose(s.logprobs, torch_logprobs(reference, seq), atol=1e-4)


def test_greedy_tokens_match_torch(checkpoint):
    path, reference = checkpoint
    model = jaxcontam.load_model(str(path))
    rng = np.random.default_rng(1)
    prompts = [rng.integers(3, 96, size=rng.integers(1, 12)).tolist() for _ in range(5)]
    ours = generate(model, prompts, max_new_tokens=10, stop_token_ids=[], rows_per_batch=4)
    for prompt, g in zip(prompts, ours):
        with torch.no_grad():
            out = reference.generate(
                torch.tensor([prompt]),
                max_new_tokens=10,
                min_new_tokens=10,
                do_sample=False,
                eos_token_id=None,
                pad_token_id=0,
            )
        assert g.token_ids == out[0, len(prompt) :].tolist()


def test_p_true_matches_torch(checkpoint):
    path, reference = checkpoint
    model = jaxcontam.load_model(str(path))
    tok = model.tokenizer
    got = p_true(model, ["What is 2 + 2 ?", "capital of France ?"], ["4", "Paris"], template=YES_NO)
    for i, (q, a) in enumerate([("What is 2 + 2 ?", "4"), ("capital of France ?", "Paris")]):
        ids = tok.encode(YES_NO.render(q, a))
        with torch.no_grad():
            probs = torch.softmax(reference(torch.tensor([ids])).logits[0, -1].double(), -1).numpy()
        yes, no = probs[tok.convert_tokens_to_ids("Yes")], probs[tok.convert_tokens_to_ids("No")]
        assert got.p_true[i] == pytest.approx(yes, rel=1e-4)
        assert got.normalised[i] == pytest.approx(yes / (yes + no), rel=1e-4)


def test_score_command_on_checkpoint_matches_torch(checkpoint, tmp_path):
    import json

    from jaxcontam.cli import main

    path, reference = checkpoint
    texts = ["What is the capital of France ?", "Is 2 + 2 4 ? Yes", "Paris France"]
    data = tmp_path / "texts.txt"
    data.write_text("\n".join(texts) + "\n")
    out = tmp_path / "scores.jsonl"
    main(["score", "--model", str(path), "--data", str(data), "--out", str(out)])
    records = [json.loads(line) for line in out.read_text().splitlines()]
    tok = word_tokenizer()
    assert [r["id"] for r in records] == ["1", "2", "3"]
    for r, text in zip(records, texts):
        ids = tok.encode(text)
        assert r["num_tokens"] == len(ids)
        np.testing.assert_allclose(r["token_logprobs"], torch_logprobs(reference, ids), atol=1e-4)


def test_softcapped_tied_model_logprobs_and_moments_match_torch(tmp_path):
    """gemma2: final-logit softcap and tied embeddings inside the vocabulary blocks; Min-K%++ moments too."""
    from transformers import Gemma2Config, Gemma2ForCausalLM

    config = Gemma2Config(
        vocab_size=300,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=128,
        final_logit_softcapping=3.0,
        sliding_window=8,
        attn_implementation="eager",
    )
    torch.manual_seed(1)
    reference = Gemma2ForCausalLM(config).eval()
    reference.save_pretrained(tmp_path)
    model = jaxcontam.load_model(str(tmp_path))
    rng = np.random.default_rng(2)
    seqs = [rng.integers(0, 300, size=n).tolist() for n in (5, 40, 17)]
    scores = score_logprobs(model, seqs, with_stats=True, vocab_block=64)
    for seq, s in zip(seqs, scores):
        with torch.no_grad():
            logp = torch.log_softmax(reference(torch.tensor([seq])).logits[0, :-1].double(), -1).numpy()
        p = np.exp(logp)
        mu = (p * logp).sum(-1)
        sigma = np.sqrt((p * logp**2).sum(-1) - mu**2)
        np.testing.assert_allclose(s.logprobs, logp[np.arange(len(seq) - 1), seq[1:]], atol=1e-4)
        np.testing.assert_allclose(s.mean_logprobs, mu, atol=1e-4)
        np.testing.assert_allclose(s.std_logprobs, sigma, atol=1e-4)
