"""gpulint: a linter and auto-fixer for PyTorch training scripts."""

__version__ = "0.1.0"
