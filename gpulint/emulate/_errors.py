"""Torch-free exception types of the emulator."""

from __future__ import annotations


class EmulationUnsupported(RuntimeError):
    """The script reached a CUDA feature that an emulated device cannot provide."""

    def __init__(self, feature: str, reason: str) -> None:
        self.feature = feature
        self.reason = reason
        super().__init__(f"{feature} cannot be emulated: {reason}")
