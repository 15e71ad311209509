"""ReCaLL and CoDeC on the real SmolLM2-135M-Instruct against the same definitions in plain loops over a torch model
of the same file. Its BPE tokenizer adds no BOS (the bundled one does), so the text follows the prefix whole: ReCaLL
scores every text token after the prefix, the first included, and CoDeC the text's tokens 1..n-1, the ones scored
alone; a toy with a BOS cannot show either."""

import numpy as np
import pytest

from helpers import SMOLLM2_FOLDER, SMOLLM2_GGUF, torch_smollm2, torch_token_logprobs
from jaxcontam.detect.codec import CodecSettings, codec_records, context_items
from jaxcontam.detect.prefixed import SEPARATOR
from jaxcontam.detect.recall import BUNDLED_NONMEMBERS, RecallSettings, recall_records

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def smollm2(shared_data):
    import jaxcontam
    from jaxcontam.data.item import Benchmark, Item

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    questions = [("What is the capital of France?", "Paris"), ("How many legs does a spider have?", "Eight")]
    questions += [("Which gas do plants take in from the air?", "Carbon dioxide")]
    items = tuple(Item(f"q{i}", "quiz", q, a) for i, (q, a) in enumerate(questions))  # short: few, small programs
    benchmark = Benchmark("quiz", "test", items)
    yield (
        jaxcontam.load_model(shared_data / SMOLLM2_FOLDER),
        torch_smollm2(shared_data / SMOLLM2_FOLDER / SMOLLM2_GGUF),
        benchmark,
    )
    torch.set_num_threads(threads)


def test_recall_and_codec_on_smollm2_match_torch(smollm2):
    ours, theirs, benchmark = smollm2
    tok = ours.tokenizer
    items = list(benchmark)
    assert tok.encode(benchmark.solved_text(items[0]))[0] != tok.bos_token_id  # no BOS: the case under test
    recall = recall_records(ours, benchmark, items[:2], RecallSettings(shots=1))
    prefix = tok.encode(BUNDLED_NONMEMBERS[0] + SEPARATOR)  # fits whole in 8192 positions
    codec = codec_records(ours, benchmark, items[:2], CodecSettings(shots=2), 0)
    for index, (item, r, c) in enumerate(zip(items, recall, codec)):
        ids = tok.encode(benchmark.solved_text(item))
        alone = torch_token_logprobs(theirs, ids).mean()
        after = torch_token_logprobs(theirs, prefix + ids)[len(prefix) - 1 :]  # every text token, the first too
        assert len(after) == len(ids)
        assert r["recall_logprob"] == pytest.approx(alone, abs=2e-3)
        assert r["recall"] == pytest.approx(after.mean() / alone, rel=2e-3)
        context = tok.encode(
            SEPARATOR.join(benchmark.solved_text(o) for o in context_items(items, index, 2, 0)) + SEPARATOR
        )
        same = torch_token_logprobs(theirs, context + ids)[len(context) :]  # tokens 1..n-1 of the text
        assert len(same) == len(ids) - 1
        assert c["codec_delta"] == pytest.approx(float(same.mean() - alone), abs=2e-3)
    assert all(np.isfinite([r["recall"] for r in recall]))
