"""Fleet hybrid parallelism for the Paddle scripts: data, tensor and sharding degrees.

The harness plugin turns a FlagPerf config name (``TP2PP1SH1SP4``) or the case parameters
into ``--parallel`` JSON (every degree and the sharding stage, always); this module builds
the matching fleet strategy. Pure data
parallel (every degree 1) uses ``paddle.DataParallel`` and works on CPUs with gloo; the
hybrid layouts need GPUs with NCCL.
"""

from __future__ import annotations

from paddle_common import Runtime, fail


def setup_hybrid(rt: Runtime, layout: dict, seed: int) -> None:
    tp = int(layout["tensor_parallel_degree"])
    pp = int(layout["pipeline_parallel_degree"])
    sd = int(layout["sharding_degree"])
    if tp == pp == sd == 1:
        rt.init_data_parallel()
        return
    if not rt.dedicated:
        fail(f"tensor parallel {tp}, pipeline parallel {pp} and sharding degree {sd} need "
             "accelerators (a device per process); on the CPU only data parallel (every degree 1) runs")
    if pp > 1:
        fail("pipeline parallel (PP > 1) is not implemented by the harness Paddle GPT script; "
             "use a PP1 config")
    if rt.world % (tp * pp * sd):
        fail(f"{rt.world} processes cannot be split into TP {tp} x PP {pp} x sharding {sd}")
    import paddle.distributed.fleet as fleet

    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": rt.world // (tp * pp * sd), "mp_degree": tp,
                               "pp_degree": pp, "sharding_degree": sd}
    strategy.tensor_parallel_configs = {"tensor_init_seed": seed}
    fleet.init(is_collective=True, strategy=strategy)
    rt.hybrid = fleet.get_hybrid_communicate_group()


def shard_optimizer(rt: Runtime, layout: dict, model, optimizer, scaler):
    """Wrap model/optimizer for the layout; returns (model, optimizer, scaler, description)."""
    if rt.hybrid is None:
        return rt.wrap(model), optimizer, scaler, "data parallel" if rt.world > 1 else "single"
    import paddle.distributed.fleet as fleet

    stage = int(layout["sharding_stage"])
    tp, sd = int(layout["tensor_parallel_degree"]), int(layout["sharding_degree"])
    description = f"fleet hybrid: TP {tp}, sharding stage {stage} over {sd}"
    if stage >= 2 and sd > 1:
        from paddle.distributed.sharding import group_sharded_parallel

        level = "os_g" if stage == 2 else "p_g_os"
        dp_group = (rt.hybrid.get_data_parallel_group()
                    if rt.hybrid.get_data_parallel_world_size() > 1 else None)
        model, optimizer, scaler = group_sharded_parallel(model, optimizer, level=level, scaler=scaler,
                                                          group=rt.hybrid.get_sharding_parallel_group(),
                                                          dp_group=dp_group)
        return model, optimizer, scaler, description
    model = fleet.distributed_model(model)
    optimizer = fleet.distributed_optimizer(optimizer)
    if scaler is not None:
        scaler = fleet.distributed_scaler(scaler)
    return model, optimizer, scaler, description
