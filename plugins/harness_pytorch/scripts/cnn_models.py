"""ResNet-50 v1.5 and MobileNetV1 in plain torch.nn (torchvision is not needed).

The same networks as ``paddle.vision.models.resnet50``/``mobilenet_v1`` and the MXNet plugin's
model-zoo networks: identical layers and parameter counts (25,557,032 and 4,231,976 with
1000 classes), so the image cases compare frameworks, not architectures.
"""

from __future__ import annotations

import torch
from torch import nn


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, relu: bool = True):
    layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class Bottleneck(nn.Module):
    """1x1 -> 3x3 (stride here: v1.5) -> 1x1, expansion 4."""

    def __init__(self, cin: int, width: int, stride: int):
        super().__init__()
        cout = width * 4
        self.body = nn.Sequential(conv_bn(cin, width, 1), conv_bn(width, width, 3, stride),
                                  conv_bn(width, cout, 1, relu=False))
        self.downsample = (conv_bn(cin, cout, 1, stride, relu=False)
                           if stride != 1 or cin != cout else nn.Identity())
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.downsample(x))


class ResNet50(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
        stages, cin = [], 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for index in range(blocks):
                stages.append(Bottleneck(cin, width, stride if index == 0 else 1))
                cin = width * 4
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, num_classes)
        _init(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.stages(self.stem(x))), 1))


class MobileNetV1(nn.Module):
    # (output channels, stride) of the 13 depthwise-separable blocks.
    BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
              (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))

    def __init__(self, num_classes: int = 1000, width: float = 1.0):
        super().__init__()
        cin = int(32 * width)
        layers = [conv_bn(3, cin, 3, 2)]
        for cout, stride in self.BLOCKS:
            cout = int(cout * width)
            layers += [conv_bn(cin, cin, 3, stride, groups=cin), conv_bn(cin, cout, 1)]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)
        _init(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


def _init(model: nn.Module) -> None:
    """Kaiming normal over the fan-out for convolutions, batch norms 1 and 0, except the last
    batch norm of each bottleneck's residual branch: its scale starts at 0 (Goyal et al. 2017,
    "zero gamma"), so each block starts as its shortcut. With scale 1 the 16 branches add up:
    the classifier's input starts with a squared norm of about 4,900 per image (1,020 with
    zero gamma) and its first SGD steps swing the logits, which lifted the smoke runs' loss
    from about 2.6 to 3.1-4.0 within ten steps at every warm-up length and rate tried
    (docs/health.md)."""
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(module, nn.BatchNorm2d):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
    for module in model.modules():
        if isinstance(module, Bottleneck):
            nn.init.zeros_(module.body[-1][1].weight)  # conv_bn(..., relu=False): [conv, bn]


def build_model(name: str, num_classes: int, width: float = 1.0) -> nn.Module:
    if name == "resnet50":
        return ResNet50(num_classes)
    if name == "mobilenet_v1":
        return MobileNetV1(num_classes, width)
    raise ValueError(f"unknown model {name!r}; this script trains resnet50 and mobilenet_v1")


def trainable_parameters(model: nn.Module) -> int:
    """Parameters the optimizer updates (BatchNorm running statistics are buffers)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
