"""MXNet's SGD momentum in PyTorch's convention (``mxnet_optimizer.RateOutsideSGD``), run in
the isolated MXNet environment against PyTorch's ``torch.optim.SGD`` in this interpreter."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.cache import default_cache_dir
from harness.envs.store import EnvStore, default_envs_root

SCRIPTS = Path(__file__).resolve().parents[3] / "plugins" / "harness_mxnet" / "scripts"
RATES = [x / 64 for x in (1.0, 2.0, 3.0, 1.5, 1.5, 0.5)]  # warm-up, decay, a constant stretch
MOMENTUM, DECAY = 0.875, 0.0625  # these and the rates exact in float32 (MXNet passes them so)

TRAIN = """
import json, sys
import mxnet as mx
import numpy as np
from mxnet import autograd, gluon
import mxnet_optimizer
weight0, grads, rates, momentum, decay, optimizer, devices = json.loads(sys.stdin.read())
ctx = [mx.cpu(i) for i in range(devices)]
param = gluon.Parameter("w", shape=(len(weight0),), dtype="float64")
param.initialize(ctx=ctx)
param.set_data(mx.nd.array(weight0, dtype="float64"))
trainer = gluon.Trainer([param], optimizer, {"learning_rate": rates[0], "momentum": momentum,
                                             "wd": decay},
                        kvstore="local", update_on_kvstore=False)  # one state per device
for rate, grad in zip(rates, grads):
    trainer.set_learning_rate(rate)
    with autograd.record():
        losses = [(param.data(c) * mx.nd.array(grad, ctx=c, dtype="float64")).sum() for c in ctx]
    autograd.backward(losses)
    trainer.step(devices)  # the devices' gradients are summed: their mean is grad
print("WEIGHTS" + json.dumps([param.data(c).asnumpy().tolist() for c in ctx]))
"""


def _mxnet_python() -> Path:
    store = EnvStore(default_envs_root(default_cache_dir()))
    for env in store.list():
        if env.complete and env.record.name == "mxnet-cpu":
            return env.record.python_in(env.folder)
    pytest.skip("no built mxnet-cpu environment (`harness env build --case mobilenet_v1 "
                "--framework mxnet` builds it)")


def _mxnet_weights(optimizer: str, devices: int, weight0, grads) -> list[np.ndarray]:
    payload = json.dumps([weight0.tolist(), grads.tolist(), RATES, MOMENTUM, DECAY, optimizer, devices])
    proc = subprocess.run([str(_mxnet_python()), "-c", TRAIN], input=payload, cwd=SCRIPTS,
                          env=dict(os.environ, PYTHONPATH=str(SCRIPTS)),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(l for l in proc.stdout.splitlines() if l.startswith("WEIGHTS"))
    return [np.array(w) for w in json.loads(line[len("WEIGHTS"):])]


def _torch_weights(weight0, grads) -> np.ndarray:
    weight = torch.nn.Parameter(torch.from_numpy(weight0.copy()))
    optimizer = torch.optim.SGD([weight], lr=RATES[0], momentum=MOMENTUM, weight_decay=DECAY)
    for rate, grad in zip(RATES, grads):
        for group in optimizer.param_groups:
            group["lr"] = rate
        weight.grad = torch.from_numpy(grad.copy())
        optimizer.step()
    return weight.detach().numpy()


@pytest.mark.parametrize("devices", [1, 2])
def test_rate_outside_sgd_trains_pytorchs_momentum_convention(devices):
    rng = np.random.default_rng(0)
    weight0, grads = rng.normal(size=64), rng.normal(size=(len(RATES), 64))
    expected = _torch_weights(weight0, grads)
    for weights in _mxnet_weights("rateoutsidesgd", devices, weight0, grads):
        np.testing.assert_allclose(weights, expected, rtol=1e-12, atol=1e-12)
    # MXNet's own SGD keeps the rate inside the buffer: another trajectory once the rate changes.
    [own, *_] = _mxnet_weights("sgd", devices, weight0, grads)
    assert np.abs(own - expected).max() > 1e-3
