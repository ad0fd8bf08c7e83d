"""A case is the same model in every framework: equal parameter counts (and counted FLOPs).

Each framework counts inside its own environment (Paddle's and MXNet's are built by
harness.envs exactly as a run builds them; PyTorch is the current interpreter).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.envs import ensure_environment
from harness_cases.bert_cases import bert_base_seq128
from harness_cases.gpt_cases import gpt3_case
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR

pytestmark = pytest.mark.slow
PLUGINS = Path(__file__).resolve().parents[3] / "plugins"

GPT_DIMS = [  # (layers, hidden, heads, seq, vocab): the 125M case and the smoke preset
    (12, 768, 12, 2048, 50304),
    (2, 128, 4, 256, 2048),
]
CNN_CLASSES = [1000, 10]

COUNT_TORCH = """
import json, sys
from gpt_model import GPT
from model_flops import gpt_training_flops_per_token
from cnn_models import build_model, trainable_parameters
from transformers import BertConfig, BertForPreTraining
out = {"gpt": [], "cnn": {}, "bert": None}
for layers, hidden, heads, seq, vocab in GPT_DIMS:
    n = GPT(vocab_size=vocab, seq_len=seq, num_layers=layers, hidden_size=hidden, num_heads=heads).num_parameters()
    out["gpt"].append([n, gpt_training_flops_per_token(n, layers, hidden, seq)])
for name in ("resnet50", "mobilenet_v1"):
    out["cnn"][name] = [trainable_parameters(build_model(name, c)) for c in CNN_CLASSES]
b = BERT
config = BertConfig(vocab_size=b["vocab_size"], hidden_size=b["hidden_size"], num_hidden_layers=b["num_layers"],
                    num_attention_heads=b["num_heads"], intermediate_size=b["intermediate_size"],
                    max_position_embeddings=b["max_position_embeddings"], type_vocab_size=b["type_vocab_size"])
out["bert"] = sum(p.numel() for p in BertForPreTraining(config).parameters())
print("COUNTS" + json.dumps(out))
"""

COUNT_PADDLE = """
import json
from gpt_model import GPT
from model_flops import gpt_training_flops_per_token
from bert_model import BertForPreTraining
from train_cnn import build_model, trainable_parameters
out = {"gpt": [], "cnn": {}, "bert": None}
for layers, hidden, heads, seq, vocab in GPT_DIMS:
    n = GPT(vocab_size=vocab, seq_len=seq, num_layers=layers, hidden_size=hidden, num_heads=heads).num_parameters()
    out["gpt"].append([n, gpt_training_flops_per_token(n, layers, hidden, seq)])
for name in ("resnet50", "mobilenet_v1"):
    out["cnn"][name] = [trainable_parameters(build_model(name, c, 1.0)) for c in CNN_CLASSES]
out["bert"] = BertForPreTraining(BERT).num_parameters()
print("COUNTS" + json.dumps(out))
"""

COUNT_MXNET = """
import json
import mxnet as mx
from mxnet_models import build_model, trainable_parameters
out = {"cnn": {}}
for name in ("resnet50", "mobilenet_v1"):
    counts = []
    for c in CNN_CLASSES:
        net = build_model(name, c)
        net.initialize()
        net(mx.nd.zeros((1, 3, 64, 64)))
        counts.append(trainable_parameters(net))
    out["cnn"][name] = counts
print("COUNTS" + json.dumps(out))
"""


def _count(python: str, code: str, scripts: Path) -> dict:
    prelude = (f"GPT_DIMS = {GPT_DIMS!r}\nCNN_CLASSES = {CNN_CLASSES!r}\n"
               f"BERT = {dict(bert_base_seq128().params)!r}\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(scripts), str(SHARED_SCRIPTS_DIR)]),
               GLOG_minloglevel="2", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([python, "-c", prelude + code], env=env, cwd=scripts,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(l for l in proc.stdout.splitlines() if l.startswith("COUNTS"))
    return json.loads(line[len("COUNTS"):])


@pytest.fixture(scope="module")
def counts(framework_cache):
    from harness_mxnet.plugin import REQUIREMENTS as MXNET
    from harness_paddle.plugin import REQUIREMENTS as PADDLE

    root = framework_cache / "envs"
    paddle_dir, paddle_env, _ = ensure_environment(PADDLE["cpu"], root)
    mxnet_dir, mxnet_env, _ = ensure_environment(MXNET["cpu"], root)
    return {
        "pytorch": _count(sys.executable, COUNT_TORCH, PLUGINS / "harness_pytorch" / "scripts"),
        "paddle": _count(str(paddle_env.python_in(paddle_dir)), COUNT_PADDLE,
                         PLUGINS / "harness_paddle" / "scripts"),
        "mxnet": _count(str(mxnet_env.python_in(mxnet_dir)), COUNT_MXNET,
                        PLUGINS / "harness_mxnet" / "scripts"),
    }


def test_gpt_same_parameters_and_flops_in_pytorch_and_paddle(counts):
    assert counts["pytorch"]["gpt"] == counts["paddle"]["gpt"]
    # The 125M case really is GPT-3 125M (tied embeddings counted once).
    assert 124_000_000 < counts["pytorch"]["gpt"][0][0] < 127_000_000


@pytest.mark.parametrize("name, full", [("resnet50", 25_557_032), ("mobilenet_v1", 4_231_976)])
def test_cnns_same_parameters_in_three_frameworks(counts, name, full):
    torch_counts = counts["pytorch"]["cnn"][name]
    assert torch_counts == counts["paddle"]["cnn"][name] == counts["mxnet"]["cnn"][name]
    assert torch_counts[0] == full  # the published sizes of ResNet-50 v1.5 and MobileNetV1


def test_bert_same_parameters_in_pytorch_and_paddle(counts):
    assert counts["pytorch"]["bert"] == counts["paddle"]["bert"] == 110_106_428


def test_gpt_case_dims_are_what_is_counted():
    case = gpt3_case("gpt3_125M")
    assert (case.params["num_layers"], case.params["hidden_size"], case.params["num_heads"],
            case.params["seq_len"], case.params["vocab_size"]) == GPT_DIMS[0]
