"""The CNNs of the harness image cases, from ``mxnet.gluon.model_zoo.vision``.

``mobilenet_v1`` is the zoo's ``mobilenet1.0``. ``resnet50`` is the zoo's ``ResNetV1``
network with a ResNet-50 v1.5 bottleneck: the zoo's own ``resnet50_v1`` is the original v1
(stride 2 in the first 1x1 convolution, biases on the 1x1 convolutions), which has 18,880
more parameters and about 10% fewer FLOPs than the v1.5 model that PaddleClas, NGC and the
other harness frameworks train; the case must be the same network everywhere.
"""

from __future__ import annotations

from mxnet.gluon import nn
from mxnet.gluon.block import HybridBlock
from mxnet.gluon.model_zoo import vision
from mxnet.gluon.model_zoo.vision.resnet import ResNetV1


class BottleneckV15(HybridBlock):
    """ResNet v1.5 bottleneck: 1x1 -> 3x3 (stride here) -> 1x1, no convolution biases."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        mid = channels // 4
        self.body = nn.HybridSequential(prefix="")
        self.body.add(nn.Conv2D(mid, kernel_size=1, strides=1, use_bias=False))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation("relu"))
        self.body.add(nn.Conv2D(mid, kernel_size=3, strides=stride, padding=1, use_bias=False))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation("relu"))
        self.body.add(nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False))
        self.body.add(nn.BatchNorm())
        if downsample:
            self.downsample = nn.HybridSequential(prefix="")
            self.downsample.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False,
                                          in_channels=in_channels))
            self.downsample.add(nn.BatchNorm())
        else:
            self.downsample = None

    def hybrid_forward(self, F, x):
        residual = x
        x = self.body(x)
        if self.downsample is not None:
            residual = self.downsample(residual)
        return F.Activation(x + residual, act_type="relu")


def build_model(name: str, num_classes: int, width: float = 1.0):
    if name == "mobilenet_v1":
        return vision.MobileNet(multiplier=width, classes=num_classes)
    if name == "resnet50":
        return ResNetV1(BottleneckV15, [3, 4, 6, 3], [64, 256, 512, 1024, 2048], classes=num_classes)
    raise ValueError(f"unknown model {name!r}; the MXNet plugin trains resnet50 and mobilenet_v1")


def trainable_parameters(net) -> int:
    """Parameters the trainer updates (BatchNorm running statistics are not counted)."""
    return sum(int(p.data().size) for p in net.collect_params().values() if p.grad_req != "null")


def initialise(net) -> None:
    """The initialisation of the PyTorch plugin's networks (``cnn_models._init`` and
    ``torch.nn.Linear``'s default) on a network whose shapes are known: Kaiming normal over
    the fan-out for convolutions, batch norms 1 and 0, the classifier uniform(+-1/sqrt(in)).
    Gluon's ``MSRAPrelu`` (over the average of fan-in and fan-out, for PReLU's slope 0.25) and
    its classifier init differed, which ``harness equivalence`` found. The last batch norm of
    each bottleneck's residual branch starts with scale 0, as in ``cnn_models._init`` (Goyal et
    al. 2017's "zero gamma": each block starts as its shortcut)."""
    import math

    import mxnet as mx

    def visit(block):
        if isinstance(block, nn.Conv2D):
            out_channels, _, kh, kw = block.weight.shape
            block.weight.set_data(mx.nd.random.normal(0, math.sqrt(2.0 / (out_channels * kh * kw)),
                                                      shape=block.weight.shape))
        elif isinstance(block, nn.BatchNorm):
            block.gamma.set_data(mx.nd.ones(block.gamma.shape))
            block.beta.set_data(mx.nd.zeros(block.beta.shape))
        elif isinstance(block, nn.Dense):
            bound = 1.0 / math.sqrt(block.weight.shape[1])
            block.weight.set_data(mx.nd.random.uniform(-bound, bound, shape=block.weight.shape))
            block.bias.set_data(mx.nd.random.uniform(-bound, bound, shape=block.bias.shape))
        for child in block._children.values():
            visit(child)
        if isinstance(block, BottleneckV15):
            last = block.body[len(block.body) - 1]
            last.gamma.set_data(mx.nd.zeros(last.gamma.shape))

    visit(net)
