"""Matching units: text -> int32 id sequences (model tokens or normalised words).

`load_units(spec)` accepts
  - "words": lowercased words with punctuation stripped, each mapped to a stable id
    (crc32 of its UTF-8 bytes, 31 bits; two words sharing an id are treated as equal);
  - a local folder holding `tokenizer.json` (any Hugging Face fast tokenizer), a `tokenizer.json`
    file, or a tiktoken BPE ranks file (`*.tiktoken`, converted to an equivalent byte-level BPE);
  - a GGUF model file, or a folder holding one: the model's own tokenizer, from the file's metadata;
  - anything else is passed to `transformers.AutoTokenizer.from_pretrained` (local folder of
    another format, or a hub name on machines that can reach the hub).
Texts are encoded without special tokens, in parallel on every core (`text_encoder.TextEncoder`: long
documents cut at safe spaces, tiktoken's core for byte-level BPEs it provably equals).
Every units object carries `name` (what the user gave) and `sha256` (of the tokenizer's full
serialisation), written into index and count files so a mismatch is caught on load.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import re
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from jaxcontam.errors import DataError, ModelError
from jaxcontam.ngram.text_encoder import TextEncoder
from jaxcontam.ngram.tiktoken_twin import bpe_split, byte_to_unicode
from jaxcontam.storage import as_path

if TYPE_CHECKING:
    import tokenizers

_PUNCTUATION = re.compile(r"[^\w\s]")


def normalize_for_matching(text: str) -> str:
    """ConTAM/Llama-2 style normalisation: lowercase, punctuation removed, every word after one space.

    The leading space gives the first word the same token as every other word under a byte-level BPE,
    so an item's normalised text tokenizes alike at the start of a document and inside one.
    """
    words = _PUNCTUATION.sub(" ", text.lower()).split()
    return " " + " ".join(words) if words else ""


@dataclasses.dataclass(frozen=True)
class WordUnits:
    """Normalised words as units; ids are a stable hash, so no vocabulary is needed."""

    name: str = "words"
    sha256: str = "words-crc32-v1"

    @staticmethod
    def _words(text: str) -> list[str]:
        return normalize_for_matching(text).split()

    def encode_batch(self, texts: list[str]) -> list[np.ndarray]:
        return [
            np.fromiter((zlib.crc32(w.encode()) & 0x7FFFFFFF for w in self._words(t)), dtype=np.int32) for t in texts
        ]

    def char_spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) character offsets of each unit in `normalize_for_matching(text)`."""
        return [m.span() for m in re.finditer(r"\S+", normalize_for_matching(text))]

    def shown_text(self, text: str) -> str:
        """The text that `char_spans` offsets point into."""
        return normalize_for_matching(text)


@dataclasses.dataclass(frozen=True)
class TokenizerUnits:
    """Model tokens from a `tokenizers.Tokenizer`."""

    name: str
    sha256: str
    tokenizer: tokenizers.Tokenizer = dataclasses.field(repr=False, compare=False)

    @functools.cached_property
    def encoder(self) -> TextEncoder:
        return TextEncoder(self.tokenizer)

    def encode_batch(self, texts: list[str]) -> list[np.ndarray]:
        return self.encoder.encode_batch(list(texts))

    def char_spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) character offsets of each token of `text`."""
        return [(start, end) for start, end in self.tokenizer.encode(text, add_special_tokens=False).offsets]

    def shown_text(self, text: str) -> str:
        return text


def load_units(spec: str | Path) -> WordUnits | TokenizerUnits:
    """Units from a spec string (see module docstring)."""
    import tokenizers

    from jaxcontam.models.tokenizer_files import gguf_file

    if str(spec) == "words":
        return WordUnits()
    path = as_path(spec)  # local, or in a bucket
    if path.is_dir() and (path / "tokenizer.json").is_file():
        tokenizer = tokenizers.Tokenizer.from_str((path / "tokenizer.json").read_text(encoding="utf-8"))
    elif path.is_file() and path.name.endswith(".json"):
        tokenizer = tokenizers.Tokenizer.from_str(path.read_text(encoding="utf-8"))
    elif path.is_file() and path.suffix == ".tiktoken":
        tokenizer = tokenizer_from_tiktoken(path)
    elif (gguf := gguf_file(path)) is not None:
        tokenizer = _gguf_tokenizer(gguf)
    else:
        tokenizer = _auto_tokenizer(str(spec))
    digest = hashlib.sha256(tokenizer.to_str().encode()).hexdigest()
    return TokenizerUnits(name=str(spec), sha256=digest, tokenizer=tokenizer)


def _gguf_tokenizer(path: Path):
    from jaxcontam.models.gguf_file import read_gguf
    from jaxcontam.models.gguf_tokenizer import gguf_tokenizer

    tokenizer = gguf_tokenizer(read_gguf(path).metadata, path)
    if tokenizer is None:
        raise DataError(
            f"--tokenizer {path}: the GGUF file holds no tokenizer (no tokenizer.ggml.model); "
            "pass the model's tokenizer folder (tokenizer.json) instead"
        )
    return tokenizer.backend_tokenizer


def _auto_tokenizer(spec: str):
    from jaxcontam.models.tokenizer_files import fast_tokenizer

    try:
        return fast_tokenizer(spec).backend_tokenizer
    except ModelError as exc:
        raise DataError(
            f"--tokenizer {spec!r}: not a folder with tokenizer.json, a tokenizer.json or .tiktoken "
            f"file, nor a loadable fast Hugging Face tokenizer ({exc}); pass a local tokenizer folder "
            "or 'words'"
        ) from exc


def tokenizer_from_tiktoken(path: str | Path, special_tokens: dict[str, int] | None = None):
    """A byte-level BPE `tokenizers.Tokenizer` equivalent to a tiktoken ranks file with GPT-2's split pattern.

    Each token's merge is recovered by running BPE on its bytes with lower-ranked merges only.
    `special_tokens` defaults to GPT-2's `<|endoftext|>` right after the last rank.
    """
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers

    ranks: dict[bytes, int] = {}
    for line_number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            token_b64, rank = line.split()
            ranks[base64.b64decode(token_b64)] = int(rank)
        except ValueError as exc:
            raise DataError(f"{path}:{line_number}: expected '<base64 token> <rank>', got {line[:60]!r}") from exc
    to_unicode = byte_to_unicode()

    def as_str(b: bytes) -> str:
        return "".join(to_unicode[x] for x in b)

    vocab = {as_str(token): rank for token, rank in ranks.items()}
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) > 1:
            parts = bpe_split(token, ranks, rank)
            if len(parts) != 2:
                raise DataError(f"{path}: token of rank {rank} cannot be built from two lower-ranked tokens")
            merges.append((as_str(parts[0]), as_str(parts[1])))
    tokenizer = tokenizers.Tokenizer(models.BPE(vocab, merges, fuse_unk=False))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    if special_tokens is None:
        special_tokens = {"<|endoftext|>": len(ranks)}
    tokenizer.add_special_tokens([tokenizers.AddedToken(t, special=True) for t in special_tokens])
    return tokenizer
