"""The scoring engine: batched log-probs, generation and P(True) on a device mesh.

score_logprobs(model, token_ids, spans=None, with_stats=False, ...) -> [SequenceScores]
generate(model, prompts, max_new_tokens=64, temperature=0.0, top_p=1.0, seed=0, ...) -> [Generation]
p_true(model, questions, answers, template=KADAVATH | JudgeTemplate) -> PTrueResult
pacost_judge(model, questions, answers, ...) -> [JudgeReply]   PaCoST's released judge: P(yes) in its reply
token_logprob_stats(hidden, weight, targets, ...)   blockwise log-softmax over the vocabulary
count_compilations()                                 context manager: XLA compilations inside a block
"""

from jaxcontam.engine.compile_guard import count_compilations
from jaxcontam.engine.generation import Generation, generate
from jaxcontam.engine.pacost_judge import JudgeReply, pacost_judge
from jaxcontam.engine.ptrue import KADAVATH, JudgeTemplate, PTrueResult, p_true
from jaxcontam.engine.scoring import SequenceScores, score_logprobs
from jaxcontam.kernels.vocab_blocks import TokenStats, token_logprob_stats

__all__ = [
    "KADAVATH",
    "Generation",
    "JudgeReply",
    "JudgeTemplate",
    "PTrueResult",
    "SequenceScores",
    "TokenStats",
    "count_compilations",
    "generate",
    "p_true",
    "pacost_judge",
    "score_logprobs",
    "token_logprob_stats",
]
