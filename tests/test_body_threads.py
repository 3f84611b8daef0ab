"""The body model's float64 results do not depend on the process's torch thread count: ANNY runs
on one torch thread (`threads.one_thread()`), whatever the rest of the process uses."""

from __future__ import annotations

import numpy as np
import torch

from maskscore_core import threads
from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.records import BodyState


def _states() -> list[BodyState]:
    rng = np.random.default_rng(0)
    body = get_body_model()
    return [BodyState(phenotype={name: float(rng.uniform()) for name in body.phenotype_names},
                      expression=rng.uniform(size=len(body.action_names)),
                      pose=rng.normal(scale=0.1, size=(len(body.bone_names), 3))) for _ in range(3)]  # fmt: skip


def test_the_body_model_runs_on_one_torch_thread_and_gives_the_same_bits_on_any_count():
    body = get_body_model()
    states = _states()
    seen = []
    hook = body.torch_model.register_forward_pre_hook(lambda module, args: seen.append(torch.get_num_threads()))
    before = torch.get_num_threads()
    try:
        outputs = []
        for count in (1, 2):
            torch.set_num_threads(count)
            outputs.append(body.forward(states))
            assert torch.get_num_threads() == count  # restored afterwards
    finally:
        hook.remove()
        torch.set_num_threads(before)
    assert seen == [1, 1]
    for name in ("vertices", "bone_poses"):
        assert outputs[0][name].dtype == np.float64
        assert outputs[0][name].tobytes() == outputs[1][name].tobytes(), name


def test_one_thread_restores_the_callers_count_even_on_error():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        try:
            with threads.one_thread():
                assert torch.get_num_threads() == 1
                raise KeyError("inside")
        except KeyError:
            pass
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
