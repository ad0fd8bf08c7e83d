"""The synthesised BERT dataset is in NVIDIA's HDF5 pre-training format and deterministic."""

from __future__ import annotations

import sys

import h5py
import numpy as np

from harness_cases.bert_data import CLS, FIELDS, MASK, SEP, ensure_bert_dataset, synthesize
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR


def test_hdf5_fields_and_masking(tmp_path):
    folder, files, created = ensure_bert_dataset(tmp_path, 2048, 128, 20, 256, seed=3)
    assert created and files == ["training_0.hdf5"]
    with h5py.File(folder / files[0]) as handle:
        data = {key: handle[key][:] for key in FIELDS}
    assert data["input_ids"].shape == (256, 128) and data["masked_lm_positions"].shape == (256, 20)
    assert data["next_sentence_labels"].shape == (256,)
    assert set(np.unique(data["next_sentence_labels"])) == {0, 1}
    for i in range(256):
        ids, mask = data["input_ids"][i], data["input_mask"][i]
        n = int(mask.sum())
        assert ids[0] == CLS and ids[n - 1] == SEP and not ids[n:].any() and mask[:n].all()
        positions = data["masked_lm_positions"][i]
        count = int(np.count_nonzero(positions))
        assert 1 <= count <= 20 and not positions[count:].any()
        assert (positions[:count] < n).all() and (np.diff(positions[:count]) > 0).all()
        # 80% of the masked positions hold [MASK]; the labels are the original words.
        assert (data["masked_lm_ids"][i, :count] > SEP).all()
    assert (data["input_ids"] == MASK).sum() > 0.6 * np.count_nonzero(data["masked_lm_positions"])


def test_deterministic_and_reused(tmp_path):
    a = synthesize(2048, 128, 20, 64, seed=5)
    b = synthesize(2048, 128, 20, 64, seed=5)
    assert all(np.array_equal(a[k], b[k]) for k in FIELDS)
    assert not np.array_equal(a["input_ids"], synthesize(2048, 128, 20, 64, seed=6)["input_ids"])
    ensure_bert_dataset(tmp_path, 2048, 128, 20, 64, seed=5)
    _, _, created = ensure_bert_dataset(tmp_path, 2048, 128, 20, 64, seed=5)
    assert not created
    assert not [p for p in (tmp_path / "bert-hdf5").iterdir() if p.name.startswith(".")]


def test_reader_builds_label_rows(tmp_path):
    folder, files, _ = ensure_bert_dataset(tmp_path, 2048, 128, 20, 32, seed=1)
    sys.path.insert(0, str(SHARED_SCRIPTS_DIR))
    try:
        from bert_hdf5 import BertSamples
    finally:
        sys.path.remove(str(SHARED_SCRIPTS_DIR))
    samples = BertSamples(str(folder / files[0]))
    input_ids, segments, mask, labels, nsp = samples.sample(0)
    with h5py.File(folder / files[0]) as handle:
        positions = handle["masked_lm_positions"][0]
        ids = handle["masked_lm_ids"][0]
    count = int(np.count_nonzero(positions))
    assert (labels[positions[:count]] == ids[:count]).all()
    assert (labels != -1).sum() == count and nsp in (0, 1) and len(input_ids) == 128


def test_reader_gives_fixed_width_positions(tmp_path):
    folder, files, _ = ensure_bert_dataset(tmp_path, 2048, 128, 20, 32, seed=1)
    sys.path.insert(0, str(SHARED_SCRIPTS_DIR))
    try:
        from bert_hdf5 import BertSamples
    finally:
        sys.path.remove(str(SHARED_SCRIPTS_DIR))
    samples = BertSamples(str(folder / files[0]))
    for index in range(8):
        *inputs, label_row, nsp = samples.sample(index)
        *same_inputs, positions, labels, same_nsp = samples.sample_positions(index)
        assert all((a == b).all() for a, b in zip(inputs, same_inputs)) and nsp == same_nsp
        assert positions.shape == labels.shape == (20,)
        real = labels >= 0
        # the same (position, label) pairs as the label row; padding points at 0 with label -1
        assert sorted(zip(positions[real], labels[real])) == sorted(
            (int(i), int(label_row[i])) for i in np.flatnonzero(label_row >= 0))
        assert (positions[~real] == 0).all()
