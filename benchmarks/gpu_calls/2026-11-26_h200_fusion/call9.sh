#!/bin/bash
# Call 9, one GPU: the gradient accumulation kernel's tests after the review's changes (the
# dispatch now also checks the device and the gradient's dtype; a CUDA-only test that the flat
# gradients' slices take the kernel), kept under $OUT.
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee $OUT/pytest_on_gpu.txt
python3 -m pytest -v -p no:cacheprovider tests/plugins/harness_pytorch/test_grad_accumulate.py 2>&1 | tail -8 | tee -a $OUT/pytest_on_gpu.txt
