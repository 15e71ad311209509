"""A tiktoken twin of a byte-level BPE `tokenizer.json`: the same ids, from tiktoken's Rust core.

Byte-level BPEs (GPT-2, SmolLM2, Llama 3, Qwen2) merge the bytes of each pre-token in the order of their merge
list; tiktoken merges by the rank of the merged bytes. Ranking every byte below every merge, and merge i at
256 + i, makes the two rules agree when each merge is the one tiktoken's rule derives for its token from
lower-ranked merges, which is checked here for every merge (as `units.tokenizer_from_tiktoken` derives
merges from a ranks file). Ranks map back to the tokenizer's own ids through a table, so the vocabulary's id
order does not matter (SmolLM2 puts its special tokens first).

Only tokenizers that can be shown equal get a twin: no normalizer or NFC (texts not already in NFC go to the
tokenizer itself), one of the split patterns below reached unchanged, plain BPE (no dropout, prefixes,
suffixes or byte fallback), added tokens matched anywhere (no lstrip, rstrip or single-word rule), none a
prefix of another, holding no whitespace. A byte missing from the vocabulary is dropped by the tokenizer
(SmolLM2 lacks six control characters): texts holding one go to the tokenizer too.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata

import numpy as np

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")
# Split patterns under which a space between two non-whitespace characters only ever starts a pre-token (or
# stands alone), so a text cut at such spaces encodes, piece by piece, to the whole text's ids.
PIECE_SAFE_PATTERNS = (GPT2_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN)


def byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable unicode characters (byte-level BPE alphabet)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def bpe_split(token: bytes, ranks: dict[bytes, int], max_rank: int) -> list[bytes]:
    """Byte-pair merge `token` using only merges of rank < max_rank (tiktoken's algorithm)."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best, best_rank = None, max_rank
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and rank < best_rank:
                best, best_rank = i, rank
        if best is None:
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return parts


def split_pattern(description: dict) -> str | None:
    """The regex that cuts text into pre-tokens when it is one of `PIECE_SAFE_PATTERNS` and text reaches it
    unchanged (no normalizer or NFC, no added token holding whitespace); else None."""
    normalizer = description.get("normalizer")
    if normalizer is not None and normalizer.get("type") != "NFC":
        return None
    if any(any(c.isspace() for c in t["content"]) for t in description.get("added_tokens") or []):
        return None
    pre = description.get("pre_tokenizer") or {}
    if pre.get("type") == "ByteLevel":  # a prefix space is added to the text, never to a piece (starts with one)
        pattern = GPT2_PATTERN if pre.get("use_regex", True) else None
    elif pre.get("type") == "Sequence" and len(pre.get("pretokenizers") or []) == 2:
        split, byte_level = pre["pretokenizers"]
        plain_split = (
            split.get("type") == "Split"
            and split.get("behavior") == "Isolated"
            and not split.get("invert")
            and "Regex" in (split.get("pattern") or {})
        )
        plain_bytes = (
            byte_level.get("type") == "ByteLevel"
            and not byte_level.get("use_regex", True)
            and not byte_level.get("add_prefix_space")
        )
        pattern = split["pattern"]["Regex"] if plain_split and plain_bytes else None
    else:
        pattern = None
    return pattern if pattern in PIECE_SAFE_PATTERNS else None


@dataclasses.dataclass(frozen=True)
class TiktokenTwin:
    """tiktoken's encoder of a byte-level BPE, with the table from its ranks to the tokenizer's ids."""

    encoding: object  # tiktoken.Encoding
    ids: np.ndarray  # rank -> the tokenizer's id
    nfc: bool  # the tokenizer normalizes to NFC
    unspellable: re.Pattern | None  # characters holding a byte missing from the vocabulary

    def encode(self, text: str) -> np.ndarray | None:
        """The tokenizer's ids of `text` (no special tokens added); None for a text the tokenizer would change
        by NFC normalization or holding a byte it drops (its caller encodes those with the tokenizer)."""
        if self.nfc and not text.isascii() and not unicodedata.is_normalized("NFC", text):
            return None
        if self.unspellable is not None and self.unspellable.search(text):
            return None
        ranks = self.encoding.encode_to_numpy(text, allowed_special="all")  # type: ignore[attr-defined]
        return self.ids[ranks]


def _plain_bpe(description: dict) -> bool:
    model = description.get("model") or {}
    if model.get("type") != "BPE":
        return False
    quirks = ("dropout", "continuing_subword_prefix", "end_of_word_suffix", "byte_fallback")
    added = description.get("added_tokens") or []
    return not any(model.get(k) for k in quirks) and not any(
        t.get(k) for t in added for k in ("lstrip", "rstrip", "single_word")
    )


def tiktoken_twin(description: dict) -> TiktokenTwin | None:
    """The twin of the tokenizer `description` (its `to_str()` JSON), or None when it cannot be shown equal."""
    import tiktoken

    pattern = split_pattern(description)
    if pattern is None or (description["pre_tokenizer"].get("add_prefix_space")) or not _plain_bpe(description):
        return None
    model = description["model"]
    alphabet = byte_to_unicode()
    to_byte = {c: b for b, c in alphabet.items()}
    as_bytes = {}
    for token in model["vocab"]:
        if all(c in to_byte for c in token):
            as_bytes[token] = bytes(to_byte[c] for c in token)
    missing = [b for b, c in alphabet.items() if c not in model["vocab"]]
    if any(0x80 <= b < 0xC0 for b in missing):  # a continuation byte: too many characters to hand over
        return None
    unspellable = _unspellable_characters(missing)
    ranks = {bytes([b]): b for b in range(256)}
    rank_ids = [model["vocab"].get(alphabet[b], -1) for b in range(256)]  # -1: never emitted
    for index, merge in enumerate(model.get("merges") or []):
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        merged = left + right
        if left not in as_bytes or right not in as_bytes or merged not in model["vocab"] or merged not in as_bytes:
            return None
        token, rank = as_bytes[merged], 256 + index
        if token in ranks or bpe_split(token, ranks, rank) != [as_bytes[left], as_bytes[right]]:
            return None  # a token built twice, or a merge tiktoken's rule would not choose
        ranks[token] = rank
        rank_ids.append(model["vocab"][merged])
    added = description.get("added_tokens") or []
    contents = [t["content"] for t in added]
    if any(a != b and b.startswith(a) for a in contents for b in contents):
        return None  # tiktoken tries special tokens in no set order; the tokenizer takes the longest match
    reachable = set(ranks) | {t["content"].encode() for t in added}
    if model.get("ignore_merges") and any(b not in reachable for b in as_bytes.values()):
        return None  # a whole-word vocabulary entry no merge builds: the tokenizer emits it, tiktoken cannot
    special = {t["content"]: len(rank_ids) + j for j, t in enumerate(added)}
    rank_ids += [t["id"] for t in added]
    encoding = tiktoken.Encoding("jaxcontam-twin", pat_str=pattern, mergeable_ranks=ranks, special_tokens=special)
    normalizer = description.get("normalizer")
    return TiktokenTwin(encoding, np.asarray(rank_ids, np.int32), normalizer is not None, unspellable)


def _unspellable_characters(missing: list[int]) -> re.Pattern | None:
    """A pattern matching the characters whose UTF-8 bytes include one of the `missing` bytes (the tokenizer
    drops such bytes; tiktoken cannot encode them), or None when none can occur. Lead and ASCII bytes only (the
    caller refuses a missing continuation byte); bytes that never occur in UTF-8 are ignored."""
    ranges = []
    for byte in missing:
        if byte < 0x80:
            ranges.append((byte, byte))
        elif 0xC2 <= byte <= 0xDF:
            ranges.append(((byte & 0x1F) << 6, ((byte & 0x1F) << 6) | 0x3F))
        elif 0xE0 <= byte <= 0xEF:
            ranges.append(((byte & 0x0F) << 12, ((byte & 0x0F) << 12) | 0xFFF))
        elif 0xF0 <= byte <= 0xF4:
            ranges.append(((byte & 0x07) << 18, ((byte & 0x07) << 18) | 0x3FFFF))
    if not ranges:
        return None
    return re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges) + "]")
