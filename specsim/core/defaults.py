"""What specsim assumes when the user does not say: one home for every default of the commands and the library.

Each default is a choice of deployment or of search range, not a physical constant (those live with the
equation that uses them, with their source).  Every output that rests on one of these says so: the
acceptance rate and the deployment are printed with each table.

``DEFAULT_HARDWARE``, ``DEFAULT_TARGET``, ``DEFAULT_DRAFT``
    The reference article's deployment: an H100 SXM serving Llama-3.1-8B with a Llama-3.2-1B draft.
``DEFAULT_ALPHA``
    0.8, the article's example acceptance of a matched same-family draft ("above 0.8").
``DEFAULT_CONTEXT_TOKENS``
    1,128 cached tokens: a 1,000-token prompt plus half of a 256-token completion, the mean context over
    a generation (the article's preset, ``shared/design/article-model.md``); ``ARTICLE_CONTEXT_TOKENS`` is it as the
    answers take it where their caller gives no context, saying so (``ARTICLE_CONTEXT``, an :class:`UnsetInt`).
``DEFAULT_BATCHES``
    Powers of two from 1 to 256, vLLM's default ``max_num_seqs``.
``DEFAULT_GAMMA_MAX``
    The largest gamma every best-gamma search tries: per batch, at a load, in serve-sim's per-batch schedules and in
    watch's verdict (one default, so that the commands agree on one question); engines cap speculation well below it.
``DEFAULT_RTOL``
    0: optimal-gamma takes the exact float64 argmax (ties to the smaller gamma).
``DEFAULT_MAX_NUM_SEQS``, ``DEFAULT_MAX_BATCHED_TOKENS``
    256 sequences in flight and 8192 tokens an iteration: the serving model's limits where neither the user nor the
    engine's own defaults on the GPU (:func:`specsim.engines.default_limits`, vLLM's) give them, said so.
"""

from __future__ import annotations

__all__ = [
    "ACCEPTANCE_WORKLOADS",
    "ARTICLE_CONTEXT",
    "ARTICLE_CONTEXT_TOKENS",
    "DEFAULT_ALPHA",
    "DEFAULT_BATCHES",
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_DRAFT",
    "DEFAULT_GAMMA_MAX",
    "DEFAULT_HARDWARE",
    "DEFAULT_INPUT_TOKENS",
    "DEFAULT_MAX_BATCHED_TOKENS",
    "DEFAULT_MAX_NUM_SEQS",
    "DEFAULT_OUTPUT_TOKENS",
    "DEFAULT_RTOL",
    "DEFAULT_TARGET",
    "DEFAULT_WORKLOAD",
    "UnsetInt",
]

DEFAULT_HARDWARE = "h100-sxm"
DEFAULT_TARGET = "llama-3.1-8b"
DEFAULT_DRAFT = "llama-3.2-1b"
DEFAULT_ALPHA = 0.8
#: A benchmark's prompt and output lengths unless told: the reference article's 1,000-token prompt and 256-token
#: completion; the mean context over a generation, the prompt plus half the output, is every batch answer's.
DEFAULT_INPUT_TOKENS = 1000
DEFAULT_OUTPUT_TOKENS = 256
DEFAULT_CONTEXT_TOKENS = DEFAULT_INPUT_TOKENS + DEFAULT_OUTPUT_TOKENS // 2  # 1128


class UnsetInt(int):
    """An int the user did not give, with where it comes from (``basis``), which the output names beside the value: a
    command's flag left at its default, or an answer's argument left out (``context_basis`` reads it)."""

    basis: str

    def __new__(cls, value: int, basis: str) -> UnsetInt:
        made = super().__new__(cls, value)
        made.basis = basis
        return made


#: Where the default context comes from (DEFAULT_CONTEXT_TOKENS), as the output says it.
ARTICLE_CONTEXT = f"the reference article's {DEFAULT_INPUT_TOKENS:,} in, {DEFAULT_OUTPUT_TOKENS} out"
#: The context an answer takes where its caller gives none, saying so: an answer's JSON calls it the article's, as the
#: command's does without --context (a bare 1128 was said to be "given").
ARTICLE_CONTEXT_TOKENS = UnsetInt(DEFAULT_CONTEXT_TOKENS, ARTICLE_CONTEXT)
DEFAULT_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
DEFAULT_GAMMA_MAX = 16
DEFAULT_RTOL = 0.0
DEFAULT_MAX_NUM_SEQS = 256
DEFAULT_MAX_BATCHED_TOKENS = 8192

#: The benchmark classes published acceptance is keyed by, and the sets each stands for; each workload of
#: :mod:`specsim.core.workloads` (what ``--workload`` names) reads one of them.
ACCEPTANCE_WORKLOADS = {
    "chat": "multi-turn chat (MT-bench, ShareGPT)",
    "code-completion": "writing code from a description (HumanEval)",
    "code-editing": "rewriting given code (vdaita/edit_5k_char, InstructCoder): the output repeats the prompt",
    "math": "grade-school and competition maths (GSM8K)",
    "summarization": "news summaries (CNN/DailyMail)",
}
#: The workload a command assumes when none is given (:mod:`specsim.core.workloads`): chat, whose published acceptance
#: (MT-bench) every drafter's default was measured on, and whose lengths are Splitwise's conversation trace.
DEFAULT_WORKLOAD = "chat"
