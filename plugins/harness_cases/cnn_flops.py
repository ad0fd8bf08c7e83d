"""Model FLOPs of the image cases, counted layer by layer from the resolved image size.

Forward FLOPs = 2 x the multiply-accumulates of every convolution and the classifier
(BatchNorm, ReLU and pooling are left out, as in the published MAC counts: ResNet-50 v1.5
4.1 G, MobileNetV1 569 M at 224x224). Training FLOPs per image = 3 x forward (the backward
pass computes gradients of inputs and of weights: twice the forward work).
"""

from __future__ import annotations

from typing import Mapping

from harness.models import FlopsEstimate

FORMULA = "3x(2*conv+fc MACs)"


def _conv(size: int, cin: int, cout: int, kernel: int, stride: int, groups: int = 1) -> tuple[int, int]:
    """(MACs, output size) of a convolution with padding kernel // 2."""
    out = (size + 2 * (kernel // 2) - kernel) // stride + 1
    return out * out * cout * (cin // groups) * kernel * kernel, out


def resnet50_macs(image_size: int, num_classes: int) -> tuple[int, int]:
    """(MACs, convolution + classifier parameters) of ResNet-50 v1.5 (stride in the 3x3
    convolution)."""
    macs, size = _conv(image_size, 3, 64, 7, 2)
    params = 3 * 64 * 49
    size = (size + 2 - 3) // 2 + 1  # 3x3 max pool, stride 2, padding 1
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for index in range(blocks):
            s = stride if index == 0 else 1
            m1, _ = _conv(size, cin, width, 1, 1)
            m2, out = _conv(size, width, width, 3, s)
            m3, _ = _conv(out, width, width * 4, 1, 1)
            macs += m1 + m2 + m3
            params += cin * width + 9 * width * width + width * width * 4
            if index == 0:
                md, _ = _conv(size, cin, width * 4, 1, s)
                macs += md
                params += cin * width * 4
            size, cin = out, width * 4
    return macs + 2048 * num_classes, params + 2048 * num_classes + num_classes


def mobilenet_v1_macs(image_size: int, num_classes: int, width: float = 1.0) -> tuple[int, int]:
    """(MACs, convolution + classifier parameters) of MobileNetV1."""
    blocks = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
              (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))
    cin = int(32 * width)
    macs, size = _conv(image_size, 3, cin, 3, 2)
    params = 27 * cin
    for cout, stride in blocks:
        cout = int(cout * width)
        dw, size = _conv(size, cin, cin, 3, stride, groups=cin)
        pw, _ = _conv(size, cin, cout, 1, 1)
        macs += dw + pw
        params += 9 * cin + cin * cout
        cin = cout
    return macs + cin * num_classes, params + cin * num_classes + num_classes


def resnet50_batchnorm_parameters() -> int:
    """Scale and shift of every BatchNorm of ResNet-50 (stem, three per bottleneck, the
    projection shortcuts')."""
    count = 2 * 64
    for width, blocks in ((64, 3), (128, 4), (256, 6), (512, 3)):
        count += blocks * 2 * (width + width + 4 * width) + 2 * 4 * width
    return count


def mobilenet_v1_batchnorm_parameters(width: float = 1.0) -> int:
    """Scale and shift of every BatchNorm of MobileNetV1 (stem, depthwise and pointwise)."""
    cin = int(32 * width)
    count = 2 * cin
    for cout in (64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024):
        cout = int(cout * width)
        count += 2 * cin + 2 * cout
        cin = cout
    return count


def cnn_flops_per_image(model: str, params: Mapping[str, object]) -> FlopsEstimate:
    """FLOPs per image; ``model_parameters`` adds the BatchNorm scales and shifts to the
    convolution and classifier weights: 25,557,032 (ResNet-50) and 4,231,976 (MobileNetV1)
    trainable parameters with 1000 classes, as every framework's model counts them."""
    size, classes = int(params["image_size"]), int(params["num_classes"])
    if model == "resnet50":
        macs, n = resnet50_macs(size, classes)
        total = n + resnet50_batchnorm_parameters()
    elif model == "mobilenet_v1":
        width = float(params.get("width_multiplier", 1.0))
        macs, n = mobilenet_v1_macs(size, classes, width)
        total = n + mobilenet_v1_batchnorm_parameters(width)
    else:
        raise ValueError(f"no FLOPs formula for model {model!r}")
    return FlopsEstimate(per_unit=3.0 * 2.0 * macs, unit="images/s", formula=FORMULA,
                         parameters=n, model_parameters=total)
