"""The exceptions of the embed package: one class per engine error kind, each carrying the engine's
message and, where the error is about one input, that input's index."""

from __future__ import annotations


class EmbedError(Exception):
    """An error reported by the engine. `kind` is the engine's error kind ("invalid argument",
    "format error", ...); `index` is the position of the input at fault in the call, or None."""

    def __init__(self, message: str, kind: str = "", index: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.index = index


class InvalidInputError(EmbedError, ValueError):
    """A bad argument or input: too long without truncate, not valid UTF-8, an unknown prompt
    name, dimensions out of range."""


class UnsupportedError(EmbedError):
    """Valid but not available here: an architecture, a device this build has no backend for."""


class ModelFormatError(EmbedError):
    """The model file is malformed or inconsistent (not GGUF, bad metadata, missing tensors)."""


class EmbedIOError(EmbedError, OSError):
    """The operating system refused (open, mmap, read), or a Hub model could not be fetched (no
    such repository, gated without a token, no network, a checksum mismatch)."""


class DeviceError(EmbedError):
    """A CUDA or cuBLAS call failed."""


class EmbedMemoryError(EmbedError, MemoryError):
    """Out of memory."""


class OverloadedError(EmbedError):
    """The engine refused work because it is overloaded."""


# base/error.h's error_kind_name() -> class.
_BY_KIND = {
    "invalid argument": InvalidInputError,
    "unsupported": UnsupportedError,
    "format error": ModelFormatError,
    "I/O error": EmbedIOError,
    "device error": DeviceError,
    "out of memory": EmbedMemoryError,
    "overloaded": OverloadedError,
}


def from_engine(kind: str, message: str, index: int | None) -> EmbedError:
    """The exception for an engine Status (called by embed._core)."""
    return _BY_KIND.get(kind, EmbedError)(message, kind, index)
