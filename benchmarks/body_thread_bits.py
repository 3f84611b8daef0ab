"""Does the body model's float64 output depend on torch's thread count? (issue 11, point 1)

Evaluates ANNY for 8 random body states on 1, 2, 1, 2 torch threads, once calling anny directly
(no pin) and once through `BodyModel.forward` (which runs anny on one torch thread), and prints
a short sha256 of the vertices of each. Run it with and without MKL_CBWR to see what MKL's
reproducibility mode does on this CPU:

    .venv/bin/python benchmarks/body_thread_bits.py
    MKL_CBWR=AUTO,STRICT .venv/bin/python benchmarks/body_thread_bits.py

Exits 1 when `BodyModel.forward` gives different bits on 1 and 2 process threads.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import torch

from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.records import BodyState


def digest(array: np.ndarray) -> str:
    return hashlib.sha256(array.tobytes()).hexdigest()[:10]


def main() -> None:
    body = get_body_model()
    rng = np.random.default_rng(0)
    states = [BodyState(phenotype={n: float(rng.uniform()) for n in body.phenotype_names},
                        expression=rng.uniform(size=len(body.action_names)),
                        pose=rng.normal(scale=0.1, size=(len(body.bone_names), 3))) for _ in range(8)]  # fmt: skip
    local, phenotype, actions = body._inputs(states)
    direct, pinned = [], []
    for count in (1, 2, 1, 2):
        torch.set_num_threads(count)
        with torch.no_grad():
            out = body.torch_model(pose_parameters=local, phenotype_kwargs=phenotype, facial_actions=actions)
        direct.append(digest(out["vertices"].numpy()))
        pinned.append(digest(body.forward(states)["vertices"]))
    print(f"MKL_CBWR={os.environ.get('MKL_CBWR', '(unset)')}; torch threads 1, 2, 1, 2")
    print(f"  anny called directly: {direct}")
    print(f"  BodyModel.forward:    {pinned}")
    if len(set(pinned)) != 1:
        raise SystemExit("BodyModel.forward depends on the thread count")


if __name__ == "__main__":
    main()
