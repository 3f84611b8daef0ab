"""Pixal3D itself: what must exist, loading from a local directory, one seeded run.

Upstream (TencentARC/Pixal3D, `inference.py`) loads `Pixal3DImageTo3DPipeline.from_pretrained`
and then attaches four DINOv3 projection feature extractors (one per stage) that it builds from
the hub model `camenduru/dinov3-vitl16-pretrain-lvd1689m`; here they are built from a copy of that
model inside the weights directory, with the hub switched off (`HF_HUB_OFFLINE`), so nothing is
fetched at run time. The stage settings below are upstream's.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np

ENV = "MASKSCORE_PIXAL3D_WEIGHTS"
MODEL_CLASS = "pixal3d.Pixal3DImageTo3DPipeline"
PACKAGES = ("pixal3d", "natten", "flex_gemm", "o_voxel")  # none on PyPI
DINO_DIR = "dinov3-vitl16-pretrain-lvd1689m"  # camenduru/dinov3-vitl16-pretrain-lvd1689m, copied in
REQUIRED_FILES = ("pipeline.json", f"{DINO_DIR}/config.json")
# upstream inference.py's IMAGE_COND_CONFIGS (model_name aside): one extractor per stage
IMAGE_COND = {
    "image_cond_model_ss": {"image_size": 512, "grid_resolution": 16},
    "image_cond_model_shape_512": {"image_size": 512, "grid_resolution": 32, "use_naf_upsample": True, "naf_target_size": 512},
    "image_cond_model_shape_1024": {"image_size": 1024, "grid_resolution": 64, "use_naf_upsample": True, "naf_target_size": 512},
    "image_cond_model_tex_1024": {"image_size": 1024, "grid_resolution": 64, "use_naf_upsample": True, "naf_target_size": 1024},
}
PIPELINE_TYPES = ("1024_cascade", "1536_cascade")


class Pixal3DUnavailable(RuntimeError):
    """A prerequisite of Pixal3D is missing here."""


def weights_dir(options_weights: str | None) -> str | None:
    return options_weights or os.environ.get(ENV) or None


def missing(weights: str | None) -> str | None:
    """The first missing prerequisite, as one line, or None when all exist: the packages (none
    on PyPI), a CUDA GPU, the weights directory and its files."""
    for package in PACKAGES:
        if importlib.util.find_spec(package) is None:
            return f"pixal3d needs the Python package {package!r} (not on PyPI; see plugins/maskscore-pixal3d/README.md)"
    import torch

    if not torch.cuda.is_available():
        return "pixal3d needs a CUDA GPU (torch.cuda.is_available() is False)"
    if not weights:
        return f"pixal3d needs local weights: pass --editor-option weights=DIR or set {ENV}"
    for name in REQUIRED_FILES:
        if not (Path(weights) / name).is_file():
            return f"pixal3d weights: {Path(weights) / name} is missing"
    return None


def load(weights: str):
    """The pipeline from `weights`, on the GPU, with upstream's four projection extractors."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # local files only: a missing file is an error, not a download
    from pixal3d.pipelines import Pixal3DImageTo3DPipeline
    from pixal3d.trainers.flow_matching.mixins.image_conditioned_proj import DinoV3ProjFeatureExtractor

    pipe = Pixal3DImageTo3DPipeline.from_pretrained(str(weights))
    dino = str(Path(weights) / DINO_DIR)
    for attribute, config in IMAGE_COND.items():
        extractor = DinoV3ProjFeatureExtractor(model_name=dino, **config)
        extractor.eval()
        setattr(pipe, attribute, extractor)
    pipe.low_vram = False
    pipe.to("cuda")
    for attribute in IMAGE_COND:
        extractor = getattr(pipe, attribute)
        extractor.to("cuda")
        if getattr(extractor, "use_naf_upsample", False):
            extractor._load_naf()
    return pipe


def generate(pipe, picture: np.ndarray, params: dict, seed: int, options: dict) -> tuple[np.ndarray, np.ndarray]:
    """One seeded run on an (H, W, 3) uint8 picture (subject on black, as upstream's own
    preprocessing leaves it; not preprocessed again: cropping would change the camera): the
    output mesh's (vertices, faces) in Pixal3D's frame."""
    from PIL import Image

    steps = {"steps": int(options["steps"])}
    meshes = pipe.run(
        Image.fromarray(picture), camera_params=params, seed=int(seed), preprocess_image=False,
        pipeline_type=options["pipeline_type"], max_num_tokens=int(options["max_tokens"]),
        sparse_structure_sampler_params=steps, shape_slat_sampler_params=steps, tex_slat_sampler_params=steps,
    )  # fmt: skip
    return as_numpy(meshes[0].vertices), as_numpy(meshes[0].faces)


def as_numpy(values) -> np.ndarray:
    """A torch tensor (on any device) or array as a numpy array."""
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    return np.asarray(values)
