"""Edit instances (frame pairs A -> B), the five-rung candidate ladder and the calibration edits."""
