"""Measurement kits: commands that run real training steps with torch to check the calculators on
the user's own GPU. Optional (pip install .[kit]); torch is imported inside their functions only,
so the package and the built scripts stay standard library."""
