"""Image classification cases: ResNet-50 (v1.5) and MobileNetV1 on ImageNet-sized images.

The seeds' CV cases (PaddleClas / gluon-cv): ``clas_MobileNetv1_bs32_fp32`` style names,
task 图像分类, direction 0, reported in images/s.
"""

from __future__ import annotations

from harness.models import CaseSpec
from harness_cases.param_ranges import CASE_RANGES

CNN_IMMUTABLE = frozenset({"image_size", "num_classes", "width_multiplier"})
# Run-time knobs only: never the measurement window (harness.measurement_window).
CNN_VENDOR_OVERRIDABLE = frozenset({
    "precision", "micro_batch_size", "grad_accum_steps", "nproc",
    "channels_last", "amp_level", "compile",
})

# Laptop-CPU preset: small images and few classes, the real network and optimizer.
CNN_SMOKE = {
    "image_size": 32, "num_classes": 10, "micro_batch_size": 32, "max_steps": 30,
    "skip_steps": 5, "lr_warmup_steps": 5, "num_samples": 512,
}

_CNNS = {
    # name: (description, micro batch, learning rate, weight decay, smoke learning rate)
    "resnet50": ("ResNet-50 v1.5 (stride in the 3x3 conv), 25.6M parameters, 224x224, 1000 classes",
                 64, 0.1, 1.0e-4, 0.005),
    "mobilenet_v1": ("MobileNetV1 (width 1.0), 4.2M parameters, 224x224, 1000 classes",
                     64, 0.1, 4.0e-5, 0.02),
}


def cnn_case(name: str) -> CaseSpec:
    description, batch, lr, wd, smoke_lr = _CNNS[name]
    return CaseSpec(
        name=name,
        headline=True,
        model=name,
        description=description,
        dataset="images-uint8",
        unit="images/s",
        mission_name="图像分类",  # image classification, as in the seeds' MobileNetV1 JSON
        direction_id=0,
        legacy_prefix="clas",
        settings={"precision": "fp32", "micro_batch_size": batch, "grad_accum_steps": 1,
                  "max_steps": 200, "skip_steps": 20},
        params={
            "image_size": 224, "num_classes": 1000, "width_multiplier": 1.0,
            "learning_rate": lr, "lr_warmup_steps": 10, "momentum": 0.9, "weight_decay": wd,
            "num_samples": 2048, "channels_last": False, "log_interval": 1,
            "compile": False,  # PyTorch: torch.compile the model (one graph for the fixed batch shape)
            "amp_level": "auto",  # Paddle AMP: O2 on GPUs, O1 on CPUs (or O1/O2)
        },
        smoke={**CNN_SMOKE, "learning_rate": smoke_lr},
        equivalence_notes=(
            "BatchNorm's running variance: PyTorch updates it with the unbiased batch variance "
            "(N/(N-1) of Paddle's and MXNet's biased one); training normalises with the batch's "
            "own statistics in every framework, so only the final running statistics (and an "
            "evaluation with them) differ",
        ),
        uniform_loss_classes=("num_classes",),
        immutable=CNN_IMMUTABLE,
        vendor_overridable=CNN_VENDOR_OVERRIDABLE,
        ranges=CASE_RANGES,
    )


def cnn_cases() -> list[CaseSpec]:
    return [cnn_case(name) for name in _CNNS]
