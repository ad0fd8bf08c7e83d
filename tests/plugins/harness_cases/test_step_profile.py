"""The diagnostics profiler of the training scripts (HARNESS_PROFILE_STEPS), shared by the frameworks."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR  # noqa: E402

if str(SHARED_SCRIPTS_DIR) not in sys.path:
    sys.path.insert(0, str(SHARED_SCRIPTS_DIR))
from step_profile import StepProfiler, host_breakdown, kernel_breakdown, profile_window  # noqa: E402


def event(key: str, us: float, annotation: bool = False) -> SimpleNamespace:
    """A profiler ``key_averages()`` entry of a CUDA kernel (or a named range)."""
    return SimpleNamespace(key=key, device_time_total=us, device_type=SimpleNamespace(name="CUDA"),
                           is_user_annotation=annotation)


def test_window_from_the_environment_on_rank_zero_only():
    assert profile_window(0, {"HARNESS_PROFILE_STEPS": "3-5"}) == (3, 5)
    assert profile_window(0, {"HARNESS_PROFILE_STEPS": "4"}) == (4, 4)
    assert profile_window(1, {"HARNESS_PROFILE_STEPS": "3-5"}) is None
    assert profile_window(0, {}) is None


def test_profiles_the_window_and_reports_wall_time():
    lines: list[str] = []
    profiler = StepProfiler(0, "cpu", lines.append, environ={"HARNESS_PROFILE_STEPS": "2-3"})
    x = torch.randn(64, 64)
    for step in range(1, 6):
        profiler.begin(step)
        (x @ x).sum().item()
        profiler.end(step)
    assert lines[0].startswith("> profile: GPU kernel time per step") and "over 2 steps" in lines[0]
    assert lines[1].startswith("> profile: wall time per step")
    assert sum(line.startswith("> profile: GPU") for line in lines) == 1  # one window, printed once
    assert any(line.startswith("> profile: host self time per step") for line in lines)
    assert any("aten::mm" in line for line in lines if line.startswith(">   host"))


def test_no_window_no_profile():
    lines: list[str] = []
    profiler = StepProfiler(0, "cpu", lines.append, environ={})
    for step in range(1, 3):
        profiler.begin(step)
        profiler.end(step)
    assert lines == []


def test_named_ranges_are_not_counted_as_kernels():
    lines = kernel_breakdown([event("nvjet_sm90_tst_128x256", 3000.0),
                              event("Optimizer.step#AdamW.step", 6000.0, annotation=True),
                              event("multi_tensor_apply_kernel adam", 1000.0)], steps=1)
    assert lines[0] == "> profile: GPU kernel time per step 4.0 ms over 1 steps"
    assert not any("Optimizer.step" in line for line in lines)


def test_cudnn_batch_norm_and_convolutions_are_not_counted_as_attention():
    lines = kernel_breakdown([
        event("void cudnn::batchnorm_bwtr_nhwc_semiPersist<__half, float>", 3000.0),
        event("sm90_xmma_wgrad_indexed_implicit_gemm_f16f16_nhwckrsc_nhwc", 2000.0),
        event("dgrad2d_c1_k1_nhwc_specialized", 1000.0),
        event("cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x128", 500.0),
        event("nvjet_sm90_hsh_128x256_64x4_2x1_v", 300.0)], steps=1)
    categories = {line.split()[1]: line for line in lines if line.startswith(">   ") and "kernel" not in line}
    assert "3.0 ms" in categories["batch"]
    assert "3.0 ms" in categories["convolution"]
    assert "0.5 ms" in categories["attention"]
    assert "0.3 ms" in categories["matmul"]


def test_eager_kernels_of_an_uncompiled_framework_have_their_own_categories():
    """Megatron-core without Transformer Engine runs eager torch kernels: they are told apart."""
    lines = kernel_breakdown([
        event("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16>", 4000.0),
        event("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<c10::BFloat16>", 1000.0),
        event("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", 2000.0),
        event("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>", 700.0),
        event("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>", 600.0),
        event("void multi_tensor_apply_kernel<FusedAdamMathFunctor>", 500.0),
        event("triton_poi_fused_gelu_view_5", 300.0),
        event("void cudnn::fusion::convert_dq_to_16bits<true>(void const*, void*)", 200.0)], steps=1)
    categories = {line[4:36].strip(): line for line in lines if line.startswith(">   ") and " kernel " not in line}
    assert "5.0 ms" in categories["layer norm (eager)"]
    assert "2.0 ms" in categories["elementwise (eager)"]
    assert "0.7 ms" in categories["reductions (eager)"]
    assert "0.6 ms" in categories["softmax and loss (eager)"]
    assert "0.5 ms" in categories["optimizer"]
    assert "0.3 ms" in categories["fused elementwise (compiled)"]
    assert "0.2 ms" in categories["attention"] and "convolution" not in categories  # cuDNN SDPA's helper


def host_event(key: str, self_us: float) -> SimpleNamespace:
    """A profiler ``key_averages()`` entry of a host operation."""
    return SimpleNamespace(key=key, self_cpu_time_total=self_us, device_time_total=0.0,
                           device_type=SimpleNamespace(name="CPU"), is_user_annotation=False)


def test_host_operations_by_self_time_per_step():
    lines = host_breakdown([host_event("cudaGraphLaunch", 400.0), host_event("aten::copy_", 2000.0),
                            event("nvjet_sm90_tst_128x256", 3000.0)], steps=2)
    assert lines[0].startswith("> profile: host self time per step 1.2 ms")
    assert lines[1].endswith("aten::copy_") and "1.00 ms" in lines[1]  # longest first, per step
    assert lines[2].endswith("cudaGraphLaunch") and "0.20 ms" in lines[2]
    assert len(lines) == 3  # device kernels are not host operations
    assert host_breakdown([event("nvjet_sm90_tst_128x256", 3000.0)], steps=1) == []

