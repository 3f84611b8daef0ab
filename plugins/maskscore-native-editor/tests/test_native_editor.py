"""The native editor's pieces on their own: the parameter layout and part masks, the flow's
sampler keeping frame A outside the part, and the plugin's registration (editor and trainers)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from maskscore_core.plugin import manager as plugins
from maskscore_core.plugin.records import BodyState
from maskscore_native_editor import flow, params
from maskscore_native_editor.model import Denoiser


def test_state_vector_round_trip_and_part_masks():
    rng = np.random.default_rng(0)
    state = BodyState(phenotype={k: 0.4 for k in params.PHENOTYPE_KEYS}, pose=rng.normal(size=(78, 3)) * 0.1,
                      translation=[0.0, 0.1, 0.0], expression=rng.random(52))
    vector = params.to_vector(state)
    assert vector.shape == (params.DIM,) == (295,)
    assert params.to_state(vector, state) == state
    mouth, neck = params.part_mask("mouth"), params.part_mask("neck")
    assert mouth[params.EXPRESSION].sum() > 0 and mouth[params.POSE].sum() == 3  # the jaw's rotation
    assert neck[params.EXPRESSION].sum() == 0 and neck[params.POSE].sum() == 6  # Neck1, Neck2
    assert not (mouth * neck).any() and not mouth[params.PHENOTYPE].any()
    with pytest.raises(params.ParamError, match="hat"):
        params.part_mask("hat")


def test_sampling_regenerates_only_the_masked_values():
    torch.manual_seed(0)
    model = Denoiser(16, 1)
    a = torch.randn(3, params.DIM)
    mask = torch.as_tensor(np.stack([params.part_mask("mouth")] * 3), dtype=torch.float32)
    target = torch.randn(3, params.DIM) * mask
    for eta in (0.0, 0.7):
        x, states, logps = flow.sample(model, a, mask, target, torch.ones(3, 1), 5, eta,
                                       torch.Generator().manual_seed(1), keep_trajectory=True)
        assert torch.equal(x[mask == 0], a[mask == 0]) and len(states) == 6
        assert (logps is None) == (eta == 0.0)
        if logps is not None:
            assert logps.shape == (3, 4) and torch.isfinite(logps).all()


def test_registers_the_editor_and_both_trainers():
    assert "native-flow" in plugins.names("editor")
    assert {"native-flow", "flow-grpo"} <= set(plugins.names("trainer"))
