"""Training: FLOPs, memory per GPU, the per-kernel step-time model and the layout search."""
