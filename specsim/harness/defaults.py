"""Defaults of the timing harness, in one place that does not import torch.

The library functions (:func:`specsim.harness.timing.measure_sweep`,
:func:`specsim.harness.specloop.run_speculative_loop`) and the ``measure`` and
``measure-loop`` commands all read them here, so the two can never disagree.
"""

#: ``specsim measure``: a GPU run by default (the harness exists to time GPUs).
MEASURE_DEVICE = "cuda"
MEASURE_DTYPE = "bf16"
MEASURE_BATCHES = (1, 2, 4, 8)
MEASURE_TOKENS_PER_SEQ = (1,)
MEASURE_CONTEXTS = (0, 512)
MEASURE_REPEATS = 10
MEASURE_WARMUP = 3
#: The engine-grade pass (specsim.harness.model): what an engine runs, not the plain reference.
MEASURE_PASS = "engine"

#: ``specsim measure-loop``: CPU-sized shapes in fp32 by default, so that it runs anywhere.
LOOP_DEVICE = "cpu"
LOOP_DTYPE = "fp32"
LOOP_TARGET = "tiny-28m"
LOOP_DRAFT = "tiny-5m"
LOOP_GAMMA = 4
LOOP_BATCHES = (1, 4)
LOOP_CONTEXT = 256
LOOP_TOKENS = 48
LOOP_REPEATS = 3
