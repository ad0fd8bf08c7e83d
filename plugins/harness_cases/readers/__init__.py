"""Framework-neutral readers of the dataset formats (numpy and h5py only).

Training scripts run in each framework's own interpreter, where harness is not installed;
framework plugins put this folder on the scripts' ``PYTHONPATH`` (``READERS_DIR``) and the
scripts wrap these readers in their framework's dataset class.
"""

from pathlib import Path

READERS_DIR = Path(__file__).resolve().parent
