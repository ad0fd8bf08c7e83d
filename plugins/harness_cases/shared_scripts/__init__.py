"""Framework-neutral modules the training scripts of several frameworks share.

Training scripts run in each framework's own interpreter (an isolated virtualenv for Paddle
and MXNet), where harness is not installed; framework plugins put this folder on the
scripts' ``PYTHONPATH`` (``SHARED_SCRIPTS_DIR``) and the scripts import its modules by name:

- ``gpt_windows``, ``bert_hdf5``, ``image_records``: readers of the cases' dataset formats
  (numpy and h5py only), which each script wraps in its framework's dataset class;
- ``gpt_dataset``: that wrapper for the GPT windows as a torch ``Dataset``, shared by the
  torch-based scripts (PyTorch and Megatron-core) so both read the same tokens in order;
- ``lr_schedule``: the cases' learning-rate schedule (standard library only).
"""

from pathlib import Path

SHARED_SCRIPTS_DIR = Path(__file__).resolve().parent
