"""specsim: a roofline and performance model for speculative decoding.

Speculative decoding lets a small draft model propose gamma tokens that a large
target model verifies in one pass.  Whether it pays depends on the acceptance
rate alpha, on gamma, and on step times that are memory-bound at small batch
and compute-bound at large batch.  specsim models those step times from
hardware profiles and model shapes and gives tokens per step, speedup and the
optimal gamma.

Modules (imports flow one way, top to bottom):

    hardware   HardwareProfile, built-in YAML profiles, validation
    models     ModelShape: parameter, weight and KV byte counts; config.json
    steptime   the roofline step-time model t(b, q, L)
    speedup    tokens per step, speedup, optimal gamma, Deployment
    article    the reference article's preset and its quoted numbers
    cli        the ``specsim`` command
"""

__version__ = "0.1.0"
