"""Collectives: their times inside and across nodes, and what one training step communicates."""
