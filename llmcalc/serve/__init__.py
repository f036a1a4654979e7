"""Serving: stack presets, the forward pass and its costs, the steady state, the simulated
benchmark, memory per GPU and the serving search."""
