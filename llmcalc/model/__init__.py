"""The model: reading a config (the one place that trusts nothing), the list of layers it
becomes, and the per-kind formulas every tool sums over that list."""
