"""Registers the PaddlePaddle ecosystem log formats (PaddleNLP, PaddleClas).

Kept apart from the Paddle framework plugin so that ``harness parse`` reads Paddle logs
whether or not PaddlePaddle itself is installed.
"""

from __future__ import annotations

from harness import hookimpl


@hookimpl
def register_log_formats(register) -> None:
    from harness_paddle.paddle_log import PaddleClasFormat, PaddleNLPFormat

    register(PaddleNLPFormat())
    register(PaddleClasFormat())
