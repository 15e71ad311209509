"""One streaming pass over a corpus that counts every table n-gram's occurrences.

Documents are read and encoded in batches on a background thread (text on every core, see
`text_encoder`; pre-tokenized arrays as they are) while the main thread counts the batch
before, so tokenization and counting overlap. Encoded documents are packed back to back into
fixed-size chunks of C window starts + n-1 overlap tokens (one compiled program for the whole
pass), and counted on the device. Each token carries its
document's segment id, so no window spans two documents; consecutive chunks overlap by n-1
tokens and each window start belongs to exactly one chunk, so nothing is lost or counted twice
at a chunk boundary. Memory: the table plus a chunk, whatever the corpus size.

Several `CountView`s are counted in the same pass, e.g. one table over raw text and one over
normalised text (lowercase, punctuation stripped) as ConTAM uses for TOKEN/NGRAM_MATCH.

Remote shards (a corpus on a bucket) are fetched `corpus.READ_AHEAD` shards ahead of the one being counted.

Resumable: after each corpus shard the counts so far and the finished shard names are written
atomically to `checkpoint`; a rerun skips finished shards. Multi-process: under
`jax.distributed`, process i counts `corpus.split(i, process_count)` (its own checkpoint file)
and the counts are summed across processes at the end.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import queue
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax
import numpy as np

from jaxcontam.data.corpus import read_ahead
from jaxcontam.errors import DataError, IndexMismatchError
from jaxcontam.ngram.lookup import count_chunk, device_table
from jaxcontam.ngram.store import read_npz, write_npz
from jaxcontam.ngram.table import NgramTable
from jaxcontam.ngram.units import normalize_for_matching


@dataclasses.dataclass(frozen=True)
class CountView:
    """A table to count, and whether corpus text is normalised before encoding for it."""

    table: NgramTable
    normalize: bool = False


@dataclasses.dataclass(frozen=True)
class CorpusCounts:
    counts: tuple[np.ndarray, ...]  # int64 [T] per view
    units_scanned: tuple[int, ...]  # corpus units (tokens/words) seen per view
    shards: tuple[str, ...]  # finished shard names (this process)
    rejected: int  # fingerprint hits refused by token verification (hash false positives)


class ChunkPacker:
    """Packs documents into chunks: int32 tokens and segment ids of length C + n - 1 (-1 = padding).

    Each yielded (tokens, segments) pair is handed over to the caller, who may give it back with
    `release` once nothing reads it any more; reused buffers avoid page-faulting fresh memory.
    """

    def __init__(self, chunk_starts: int, n: int):
        self.starts, self.n, self.width = chunk_starts, n, chunk_starts + n - 1
        self._free: list[tuple[np.ndarray, np.ndarray]] = []
        self.tokens, self.segments = self._buffer()
        self.fill = 0
        self._document = 0

    def _buffer(self) -> tuple[np.ndarray, np.ndarray]:
        return self._free.pop() if self._free else (np.zeros(self.width, np.int32), np.zeros(self.width, np.int32))

    def release(self, chunk: tuple[np.ndarray, np.ndarray]) -> None:
        self._free.append(chunk)

    def _hand_over(self, carry: int) -> tuple[np.ndarray, np.ndarray]:
        """The current chunk; the next one starts with its last `carry` tokens."""
        full = self.tokens, self.segments
        self.tokens, self.segments = self._buffer()
        if carry:
            self.tokens[:carry] = full[0][self.width - carry :]
            self.segments[:carry] = full[1][self.width - carry :]
        self.fill = carry
        return full

    def add(self, document: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Append one document (any integer dtype); yields every chunk it completes."""
        if len(document) < self.n:  # holds no window; skipping it keeps chunks dense
            return
        self._document = (self._document + 1) & 0x7FFFFFFF
        offset = 0
        while offset < len(document):
            take = min(self.width - self.fill, len(document) - offset)
            self.tokens[self.fill : self.fill + take] = document[offset : offset + take]
            self.segments[self.fill : self.fill + take] = self._document
            self.fill += take
            offset += take
            if self.fill == self.width:
                # windows starting in the last n-1 tokens end in the next chunk: carry them over
                yield self._hand_over(carry=self.n - 1)

    def flush(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The last, padded chunk if it holds any window start not yet emitted; then start afresh."""
        if self.fill >= self.n:
            self.segments[self.fill :] = -1
            yield self._hand_over(carry=0)
        self.fill = 0


class _ViewCounter:
    """Device-side counting of one view's chunks, with lazy overflow handling.

    Chunks go round-robin to every local device (one table copy and one counter each), so the GPUs
    of a host count in parallel; the counters are summed at each flush. (Several XLA CPU devices on
    one 2-core host were slower than one: `experiments/perf/ngram_count.py --cpu-devices 2`.)
    """

    def __init__(self, view: CountView, chunk_starts: int, capacity: int, verify: bool):
        self.devices = jax.local_devices()
        table = device_table(view.table)
        self.tables = [jax.device_put(table, device) for device in self.devices]
        self.rows = table.rows
        self.chunk_starts, self.capacity, self.verify = chunk_starts, capacity, verify
        self.packer = ChunkPacker(chunk_starts, view.table.n)
        self.flush_every = max(1, (1 << 30) // chunk_starts)  # int32 device counts cannot overflow
        self.host = np.zeros(len(view.table), np.int64)
        self.units = 0
        self.rejected = 0
        self._reset_device()

    def _reset_device(self):
        self.device = [jax.device_put(np.zeros(self.rows + 1, np.int32), d) for d in self.devices]
        self.device_rejected: list = []  # per-chunk scalars, fetched at flush (no eager adds per chunk)
        self.pending: list = []
        self.since_flush = 0
        self.lane = 0

    def _run(self, lane, tokens, segments, capacity, first=0, stop=None):
        self.device[lane], overflow, rejected = count_chunk(
            self.tables[lane],
            self.device[lane],
            tokens,
            segments,
            np.int32(first),
            np.int32(self.chunk_starts if stop is None else stop),
            capacity=capacity,
            verify=self.verify,
        )
        self.device_rejected.append(rejected)
        return overflow

    def _rerun(self, lane, tokens, segments, capacity, first, stop):
        """Count the window starts [first, stop) of an overflowed chunk again, in halves until no half overflows:
        every part runs the chunk's own program (a rerun at full capacity compiled one more per table)."""
        middle = (first + stop) // 2
        for part in ((first, middle), (middle, stop)):
            if bool(self._run(lane, tokens, segments, capacity, *part)):
                self._rerun(lane, tokens, segments, capacity, *part)

    def _resolve(self, keep: int):
        """Check overflow flags of all but the last `keep` dispatched chunks; rerun overflowed ones in parts.

        Each overflow also doubles the capacity of later chunks (one more compiled program), so a
        heavily contaminated corpus stops paying for reruns. A chunk's host buffers go back to the
        packer only once the device has finished reading them.
        """
        while len(self.pending) > keep:
            lane, overflow, tokens, segments, host, capacity = self.pending.pop(0)
            if bool(overflow):
                self._rerun(lane, tokens, segments, capacity, 0, self.chunk_starts)
                jax.block_until_ready(self.device[lane])
                self.capacity = min(self.chunk_starts, 2 * self.capacity)
            self.packer.release(host)

    def feed(self, document: np.ndarray) -> None:
        self.units += len(document)
        for chunk in self.packer.add(document):
            self._dispatch(chunk)

    def _dispatch(self, chunk):
        lane, device = self.lane, self.devices[self.lane]
        self.lane = (self.lane + 1) % len(self.devices)
        tokens, segments = jax.device_put(chunk[0], device), jax.device_put(chunk[1], device)
        overflow = self._run(lane, tokens, segments, self.capacity)
        self.pending.append((lane, overflow, tokens, segments, chunk, self.capacity))
        self._resolve(keep=2 * len(self.devices))  # lets the host pack the next chunks while devices count
        self.since_flush += 1
        if self.since_flush >= self.flush_every:
            self.flush_device()

    def end_shard(self) -> None:
        for chunk in self.packer.flush():
            self._dispatch(chunk)
        self.flush_device()

    def flush_device(self) -> None:
        self._resolve(keep=0)
        for counts in self.device:  # sliced on the host: a slice on the device compiles a program per table size
            self.host += np.asarray(counts, dtype=np.int64)[: self.rows]
        self.rejected += sum(int(r) for r in self.device_rejected)
        self._reset_device()


def _document_batches(shard, batch_documents: int) -> Iterator[list]:
    batch = []
    for document in shard.documents():
        batch.append(document)
        if len(batch) >= batch_documents:
            yield batch
            batch = []
    if batch:
        yield batch


_SHARD_END = object()


def _encoded_batches(shards, views, units, batch_documents: int, ahead: int = 2) -> Iterator:
    """(shard, [encoded documents per view]) per batch and (shard, _SHARD_END) after each shard, in order.

    A background thread reads batches and encodes up to one per core at once, up to `ahead` finished batches
    ahead of the consumer; an error there (a bad document, an interrupted read) is raised here, in the
    consumer's thread.
    """
    parallel = max(1, len(os.sched_getaffinity(0)))
    handoff: queue.Queue = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def encode(shard, documents):
        return [_encode(documents, units, view.normalize, shard.name) for view in views]

    def produce():
        # batches are encoded `parallel` at a time, in order: a tokenizer that cannot cut a document into
        # pieces encodes one document per call, so whole-book shards would otherwise keep one core busy
        pending: collections.deque = collections.deque()
        try:
            with ThreadPoolExecutor(parallel, thread_name_prefix="jaxcontam-encode-batch") as pool:
                for shard in shards:
                    for documents in _document_batches(shard, batch_documents):
                        pending.append((shard, pool.submit(encode, shard, documents)))
                        while len(pending) >= parallel:
                            if not put(_finished(pending.popleft())):
                                return
                    pending.append((shard, _SHARD_END))
                while pending:
                    if not put(_finished(pending.popleft())):
                        return
            put(None)
        except BaseException as error:  # handed to the consumer, which raises it after the batches read before it
            for entry in pending:
                try:
                    finished = _finished(entry)
                except BaseException:
                    break
                if not put(finished):
                    return
            put(error)

    worker = threading.Thread(target=produce, name="jaxcontam-corpus-reader", daemon=True)
    worker.start()
    try:
        while (item := handoff.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()


def _finished(entry: tuple) -> tuple:
    """(shard, encoded batch) once its encoding is done, or (shard, _SHARD_END) as it is."""
    shard, work = entry
    return (shard, work if work is _SHARD_END else work.result())


def _encode(documents: list, units, normalize: bool, shard_name: str) -> list[np.ndarray]:
    if all(d.tokens is not None for d in documents):
        if normalize:
            raise DataError(
                f"corpus shard {shard_name!r} is pre-tokenized, so it cannot be normalised (lowercase, no "
                f"punctuation) for TOKEN_MATCH/NGRAM_MATCH; use --normalize none or a text corpus"
            )
        arrays = [np.asarray(d.tokens).ravel() for d in documents]
        for d, a in zip(documents, arrays):
            if a.dtype.kind not in "iu":
                raise DataError(f"document {d.id!r} of shard {shard_name!r}: tokens must be integers, got {a.dtype}")
        return arrays  # the packer converts to int32 while copying
    if units is None:
        raise DataError(f"corpus shard {shard_name!r} holds text; pass a tokenizer (units) to encode it")
    texts = []
    for d in documents:
        if d.text is None:
            raise DataError(f"document {d.id!r} of shard {shard_name!r} has neither text nor tokens")
        texts.append(normalize_for_matching(d.text) if normalize else d.text)
    return units.encode_batch(texts)


def _checkpoint_header(views: Sequence[CountView]) -> dict:
    return {"tables": [v.table.checksum for v in views], "normalize": [v.normalize for v in views]}


def _load_checkpoint(path: Path, views, counters) -> set[str]:
    if not path.exists():
        return set()
    expect = _checkpoint_header(views)
    arrays, header = read_npz(path)
    if {k: header.get(k) for k in expect} != expect:
        raise IndexMismatchError(
            f"{path}: checkpoint of a different table or normalisation; delete it to count from scratch"
        )
    for i, counter in enumerate(counters):
        counter.host = arrays[f"counts_{i}"].astype(np.int64)
        counter.units = int(header["units_scanned"][i])
        counter.rejected = int(header["rejected"][i])
    return set(header["shards"])


def _save_checkpoint(path: Path, views, counters, shards: list[str]) -> None:
    header = dict(
        _checkpoint_header(views),
        shards=shards,
        units_scanned=[c.units for c in counters],
        rejected=[c.rejected for c in counters],
    )
    write_npz(path, {f"counts_{i}": c.host for i, c in enumerate(counters)}, header)


def _sum_over_processes(values: np.ndarray) -> np.ndarray:
    """Sum an int64 array over jax processes (split into two int32 halves: no x64 needed)."""
    from jax.experimental import multihost_utils

    low = (values & 0x7FFFFFFF).astype(np.int32)
    high = (values >> 31).astype(np.int32)
    low_all = np.asarray(multihost_utils.process_allgather(low)).astype(np.int64).sum(axis=0)
    high_all = np.asarray(multihost_utils.process_allgather(high)).astype(np.int64).sum(axis=0)
    return (high_all << 31) + low_all


def from_process_zero(values: np.ndarray | None, size: int) -> np.ndarray:
    """Process 0's int64 `values` on every process (the others pass None); `values` itself with one process."""
    if jax.process_count() == 1:
        assert values is not None, "a lone process is process 0: it passes its values"
        return values
    mine = values if jax.process_index() == 0 and values is not None else np.zeros(size, np.int64)
    return _sum_over_processes(mine)


def process_checkpoint(checkpoint: str | Path) -> Path:
    """This process's checkpoint file: `checkpoint` itself, or `<name>.process<i>of<n>` under jax.distributed."""
    path, processes = Path(checkpoint), jax.process_count()
    return path.with_name(f"{path.name}.process{jax.process_index()}of{processes}") if processes > 1 else path


def count_corpus(
    views: Sequence[CountView],
    corpus,
    units=None,
    *,
    chunk_tokens: int = 1 << 20,
    capacity: int | None = None,
    checkpoint: str | Path | None = None,
    verify: bool = True,
    batch_documents: int = 512,
) -> CorpusCounts:
    """Count every view's table n-grams in `corpus` (an object with `.shards`, each with `.name`, `.documents()`).

    `chunk_tokens` window starts per compiled chunk; `capacity` (default chunk/16) bounds the
    windows that pass the prefilter before a chunk is rerun in parts. Under
    `jax.distributed` with several processes, each counts its own `corpus.split` and the returned
    counts are the sums over all processes.
    """
    views = list(views)
    capacity = capacity or max(1, chunk_tokens // 16)
    processes = jax.process_count()
    if processes > 1:
        corpus = corpus.split(jax.process_index(), processes)
    counters = [_ViewCounter(v, chunk_tokens, capacity, verify) for v in views]
    path = process_checkpoint(checkpoint) if checkpoint is not None else None
    done = _load_checkpoint(path, views, counters) if path else set()
    finished = [s for s in (sh.name for sh in corpus.shards) if s in done]
    todo = [shard for shard in corpus.shards if shard.name not in done]
    for shard, encoded in _encoded_batches(read_ahead(todo), views, units, batch_documents):
        if encoded is not _SHARD_END:
            for counter, documents in zip(counters, encoded):
                for document in documents:
                    counter.feed(document)
            continue
        for counter in counters:
            counter.end_shard()
        finished.append(shard.name)
        if path:
            _save_checkpoint(path, views, counters, finished)
    counts = [c.host for c in counters]
    scanned = [c.units for c in counters]
    rejected = sum(c.rejected for c in counters)
    if processes > 1:
        counts = [_sum_over_processes(c) for c in counts]
        totals = _sum_over_processes(np.array(scanned + [rejected], np.int64))
        scanned, rejected = totals[:-1].tolist(), int(totals[-1])
    return CorpusCounts(tuple(counts), tuple(int(s) for s in scanned), tuple(finished), int(rejected))
