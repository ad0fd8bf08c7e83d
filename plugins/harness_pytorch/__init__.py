"""The PyTorch framework plugin: real GPT pre-training through torch (and torchrun)."""
