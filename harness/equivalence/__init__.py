"""``harness equivalence``: is a case the same computation in every framework?

One initial state in a framework-neutral format (``.npz``, canonical parameter names), loaded
by each framework's training script, trained for a few steps on the same sample order with
the same schedule in fp32; the frameworks' traces (parameter shapes, per-layer activation
checksums of the first batch, the loss of every step, step 1's gradient norms, the final
weights) compared pair by pair against tolerances derived from fp32 rounding
(:mod:`harness.equivalence.tolerance`). The framework side is
``harness_cases/shared_scripts/equivalence.py``; a framework declares the models its scripts
implement it for in ``FrameworkSpec.equivalence_models``.
"""
