"""Relative speed of GPT run settings that trade time for memory, shared by the framework
plugins' memory planners (``memory_plan``), which use them only to order their candidates
fastest first; no figure in a result comes from them.

Full recompute re-runs every block's forward (8 units of compute where 6 were: 0.75);
selective recompute re-runs the MLP only; halving the micro batch (doubling the accumulation)
costs a few percent of matrix-unit efficiency per halving.
"""

RECOMPUTE_SPEED = {"none": 1.0, "selective": 0.93, "full": 0.75}
HALVED_BATCH_SPEED = 0.96
