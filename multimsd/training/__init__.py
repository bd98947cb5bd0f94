"""Training utilities for multimsd simplifiers (losses; the training loop lives elsewhere)."""
