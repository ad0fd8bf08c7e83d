"""The synthesised GPT dataset is in PaddleNLP's format and deterministic."""

from __future__ import annotations

import numpy as np

from harness_cases.gpt_data import ensure_gpt_dataset, synthesize_tokens


def test_format_and_determinism(tmp_path):
    folder, files, created = ensure_gpt_dataset(tmp_path, vocab_size=1000, seed=7, num_tokens=50_000)
    assert created and files[0].endswith("_ids.npy") and files[1].endswith("_idx.npz")
    ids = np.load(folder / files[0])
    idx = np.load(folder / files[1])
    assert ids.dtype == np.uint16 and ids.shape == (50_000,) and int(ids.max()) < 1000
    assert int(idx["lens"].sum()) == 50_000 and len(idx["docs"]) == len(idx["lens"]) + 1
    again, _, created_again = ensure_gpt_dataset(tmp_path, vocab_size=1000, seed=7, num_tokens=50_000)
    assert not created_again and again == folder
    tokens, lens = synthesize_tokens(1000, 50_000, 7)
    assert np.array_equal(tokens, ids) and np.array_equal(lens, idx["lens"])
    other, _ = synthesize_tokens(1000, 50_000, 8)
    assert not np.array_equal(other, ids)


def test_large_vocab_uses_int32():
    tokens, _ = synthesize_tokens(100_000, 1000, 1)
    assert tokens.dtype == np.int32


def test_no_half_written_dataset_is_left(tmp_path):
    ensure_gpt_dataset(tmp_path, vocab_size=500, seed=1, num_tokens=10_000)
    leftovers = [p.name for p in (tmp_path / "gpt-npy").iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_a_real_dataset_in_the_data_dir_is_preferred(tmp_path):
    from harness_cases.gpt_data import find_real_gpt_dataset

    ensure_gpt_dataset(tmp_path, vocab_size=500, seed=1, num_tokens=10_000)
    assert find_real_gpt_dataset(tmp_path) is None  # synthetic data does not count
    np.save(tmp_path / "gpt_en_dataset_300m_ids.npy", np.arange(100, dtype=np.uint16))
    assert find_real_gpt_dataset(tmp_path) is None  # no index file yet
    np.savez(tmp_path / "gpt_en_dataset_300m_idx.npz", lens=np.array([100]), docs=np.arange(2))
    assert find_real_gpt_dataset(tmp_path) == (tmp_path, ["gpt_en_dataset_300m_ids.npy",
                                                           "gpt_en_dataset_300m_idx.npz"])


def test_the_source_is_stationary_and_learnable():
    """Token statistics of the first and second half agree (no drift a loss curve could
    climb on), and the source's entropy is far below ln(vocab), so the loss can fall."""
    from harness_cases.gpt_data import entropy_rate

    vocab = 2048
    tokens, _ = synthesize_tokens(vocab, 400_000, 3)
    half = len(tokens) // 2
    first = np.bincount(tokens[:half], minlength=vocab) / half
    second = np.bincount(tokens[half:], minlength=vocab) / (len(tokens) - half)
    common = np.argsort(first)[-64:]  # well-sampled tokens; rare ones differ by chance
    assert np.abs(first[common] - second[common]).max() < 0.1 * first[common].max()
    assert np.abs(first[common] - second[common]).sum() < 0.02
    rate = entropy_rate(vocab)
    assert 1.0 < rate < 0.5 * np.log(vocab)
    # Empirical bigram structure: the most frequent successor of a frequent token is far
    # likelier than its unigram share.
    top = int(np.argsort(first)[-10])  # a frequent token, not the commonest
    after = tokens[1:][tokens[:-1] == top]
    assert np.bincount(after, minlength=vocab).max() / len(after) > 5 * first.max()
