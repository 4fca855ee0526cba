"""The timing harness: real step times of a Llama-architecture decoder (needs torch).

This package is the only part of specsim that imports torch (the optional
``harness`` extra).  Measuring and modelling stay apart: the harness writes
tidy CSVs of measured step times; :mod:`specsim.calibration.profile` reads them and fits
hardware profiles without torch.

    model      DecoderTimingModel: random weights, KV cache, GQA, RoPE
    timing     time one forward pass per (batch, tokens per sequence, context); CSV rows
    specloop   an end-to-end speculative loop with controlled acceptance, against plain decoding
"""
