"""SGD with momentum in the convention of PyTorch's ``torch.optim.SGD`` and Paddle's
``Momentum``, for the MXNet scripts.

The frameworks keep the momentum buffer differently. PyTorch and Paddle keep gradients and
apply the current learning rate to the whole buffer::

    buf = momentum * buf + (grad + wd * w);   w -= lr_t * buf

MXNet's ``sgd_mom_update`` keeps steps, the rate of each step inside::

    mom = momentum * mom - lr_t * (grad + wd * w);   w += mom

The two are the same while the rate is constant (``mom == -lr * buf``), not while it changes
(the cases' linear warm-up and cosine decay): at step 2 of a warm-up from ``lr`` to ``2 lr``
PyTorch moves ``2 lr * momentum * g1`` along step 1's gradient and MXNet ``lr * momentum * g1``.
``harness equivalence`` measured it on MobileNetV1 in float64, where the frameworks' step-1
gradients agree to 1e-14: the losses of step 3 differed by 2%.

``RateOutsideSGD`` keeps MXNet's kernels and scales each momentum state by ``lr_t / lr_(t-1)``
before the update whenever the rate changed, so that ``mom == -lr_t * buf`` holds at every
step: one in-place product per parameter tensor on such steps. A rate of 0 loses the buffer
(``mom = -0 * buf``); the schedules (``lr_schedule.lr_at``) reach 0 at most at the last step.
"""

from __future__ import annotations

import mxnet as mx


@mx.optimizer.register
class RateOutsideSGD(mx.optimizer.SGD):
    """``mx.optimizer.SGD`` whose momentum follows PyTorch's convention (module docstring);
    registered as ``rateoutsidesgd``."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # id of a momentum state -> the learning rate of its last update. By the state, not
        # by the parameter index: a Trainer over several devices keeps one state per device
        # and index, all updated through this one optimizer.
        self._state_rates: dict[int, float] = {}

    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        if self.momentum > 0:
            many = isinstance(indices, (tuple, list))
            listed, listed_states = (indices, states) if many else ([indices], [states])
            for state, rate in zip(listed_states, self._get_lrs(listed)):
                momentum = state[0] if multi_precision else state
                previous = self._state_rates.get(id(momentum))
                if previous and previous != rate:
                    momentum *= rate / previous
                self._state_rates[id(momentum)] = rate
        super()._update_impl(indices, weights, grads, states, multi_precision=multi_precision)
