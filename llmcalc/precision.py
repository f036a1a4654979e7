"""The precision presets every script that costs serving takes (--precision): weight, activation
and KV-cache bits at once, and how NVFP4 stores its 4-bit weights. Source of the NVFP4 layout:
NVIDIA technical blog, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025.
"""

PRECISIONS = {  # --precision shorthand -> (weight bits, activation bits, kv-cache bits)
    "fp32": (32, 32, 32), "fp16": (16, 16, 16), "bf16": (16, 16, 16), "fp8": (8, 8, 8),
    "int8": (8, 8, 16), "w8a8": (8, 8, 16), "w8a16": (8, 16, 16), "w4a16": (4, 16, 16),
    "w4a8": (4, 8, 8), "fp4": (4, 4, 8), "w4a4": (4, 4, 8),
}
# --precision fp4 stores weights as NVFP4, the format NVIDIA's FP4 checkpoints (TensorRT Model
# Optimizer, nvidia/*-FP4) and Blackwell's FP4 matmuls use: 4-bit E2M1 values with one 8-bit E4M3
# scale per 16 (and one fp32 per tensor, ignored), 4.5 bits per weight (NVIDIA technical blog,
# "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025). MXFP4 (32 per
# 8-bit scale, 4.25) comes from a checkpoint's quantization_config; --weight-bits 4 counts bare values.
NVFP4_BITS = 4 + 8 / 16
