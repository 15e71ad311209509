"""A byte-level BPE tokenizer trained on the training text, saved as a Hugging Face fast tokenizer."""

from __future__ import annotations

from collections.abc import Iterable

BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"


def train_bpe_tokenizer(texts: Iterable[str], vocab_size: int = 4096):
    """A `PreTrainedTokenizerFast` (byte-level BPE, no unknown token) with BOS prepended on encode."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, BOS, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    bos = tokenizer.token_to_id(BOS)
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=BOS, eos_token=EOS, pad_token=PAD)
