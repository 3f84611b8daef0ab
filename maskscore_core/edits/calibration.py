"""Edits of each part made a fraction of the way, on bodies made straight from ANNY: what the
metric's calibration is measured on (tests/test_calibration.py, benchmarks/bench_calibration.py,
docs/metric.md "Calibration")."""

from __future__ import annotations

import numpy as np

from maskscore_core.plugin.records import BodyState
from maskscore_core.body.reference_mesh import get_reference_mesh
from maskscore_core.trials.clips import ARM_DROP_RAD

# part -> (its edit at full strength, another part's edit), like the built-in source's edits
# (trials.clips, edits.ACTION_DELTA): "bone:<bone>:<axis>" turns a SOMA bone, "scale:<part>"
# scales a region (BodyState.part_scale), anything else is a facial action.
PART_EDITS = {
    "mouth": ({"jawOpen": 0.8}, {"browInnerUp": 0.8}),
    "face": ({"mouthSmileLeft": 0.7, "mouthSmileRight": 0.7, "cheekSquintLeft": 0.5, "cheekSquintRight": 0.5}, {"eyeLookUpLeft": 0.6}),
    "eyebrow": ({"browInnerUp": 0.6, "browOuterUpLeft": 0.42, "browOuterUpRight": 0.42}, {"jawOpen": 0.8}),
    "irides": ({"eyeLookUpLeft": 0.6, "eyeLookUpRight": 0.6}, {"jawOpen": 0.8}),
    "eyelash": ({"eyeBlinkLeft": 0.8, "eyeBlinkRight": 0.8}, {"jawOpen": 0.8}),
    "eyewhite": ({"eyeWideLeft": 1.0, "eyeWideRight": 1.0}, {"jawOpen": 0.8}),
    "nose": ({"noseSneerLeft": 0.7, "noseSneerRight": 0.7}, {"eyeBlinkLeft": 0.8}),
    "neck": ({"bone:Neck1:0": 0.1, "bone:Neck2:0": 0.075}, {"jawOpen": 0.8}),
    "ears": ({"scale:ears": 1.2}, {"browInnerUp": 0.8}),
    "front hair": ({"scale:front hair": 1.2}, {"jawOpen": 0.8}),
    "back hair": ({"scale:back hair": 0.8}, {"scale:ears": 1.2}),
}


def edited_state(edit: dict, f: float = 1.0, phenotype: dict | None = None, lower_arms: bool = True) -> BodyState:
    """The body with `edit` made a fraction f of the way (f outside [0, 1] over- or undershoots),
    arms lowered as the built-in source lowers them unless `lower_arms` is False (T-pose)."""
    body = get_reference_mesh().body
    expression, pose, scales = np.zeros(52), np.zeros((78, 3)), {}
    if lower_arms:
        pose[body.bone_index("LeftArm"), 2], pose[body.bone_index("RightArm"), 2] = -ARM_DROP_RAD, ARM_DROP_RAD
    for name, value in edit.items():
        if name.startswith("bone:"):
            _, bone, axis = name.split(":")
            pose[body.bone_index(bone), int(axis)] = f * value
        elif name.startswith("scale:"):
            scales[name[len("scale:"):]] = 1.0 + f * (value - 1.0)
        else:
            expression[body.action_index(name)] = f * value
    return BodyState(expression=expression, pose=pose, phenotype=phenotype or {}, part_scale=scales)
