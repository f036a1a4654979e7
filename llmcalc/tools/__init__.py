"""One thin module per calculator: its flags, main() and report. Each is built into a standalone
calc_*.py script."""
