"""In-memory corpus doubles with the reader interface (`shards`, `split`, `documents()`), for n-gram tests."""

import dataclasses

import numpy as np


@dataclasses.dataclass
class Doc:
    id: str
    text: str | None = None
    tokens: np.ndarray | None = None


@dataclasses.dataclass
class Shard:
    """A shard that counts its passes and can simulate an interruption after `fail_after` documents."""

    name: str
    docs: list
    reads: int = 0
    fail_after: int | None = None

    def documents(self):
        self.reads += 1
        for i, doc in enumerate(self.docs):
            if self.fail_after is not None and i >= self.fail_after:
                raise KeyboardInterrupt("simulated interruption")
            yield doc


@dataclasses.dataclass
class ListCorpus:
    shards: tuple

    def split(self, index, count):
        return ListCorpus(self.shards[index::count])
