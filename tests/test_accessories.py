"""Procedural accessories: fixed topology, placed on the subject's head and neck, collapsed when absent."""

from __future__ import annotations

import numpy as np
import pytest

from maskscore_core.body import accessories
from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.records import BodyState

ALL_WORN = ("earrings_hoop", "glasses_round", "hat_brimmed", "scarf_thick")
PHENOTYPES = ({}, {"gender": 1.0, "age": 0.85, "weight": 0.75, "height": 0.3, "muscle": 0.2, "proportions": 0.7})


def _pose(state):
    body = get_body_model()
    out = body.forward([state])
    return out["vertices"][0], out["bone_poses"][0], body


def _placed(state):
    verts, bones, body = _pose(state)
    return {slot.name: slot.place(state, verts, bones, body) for slot in accessories.slots()}, verts, bones, body


def test_slots_have_small_fixed_topologies():
    slots = accessories.slots()
    assert [s.name for s in slots] == ["glasses", "hat", "earrings", "scarf"]
    assert [s.part for s in slots] == ["eyewear", "headwear", "earwear", "neckwear"]
    for slot in slots:
        assert 0 < len(slot.faces) <= 400, slot.name
        assert slot.faces.min() == 0 and slot.faces.max() == len(slot.vertices) - 1
        assert np.isfinite(slot.vertices).all()
        assert len(slot.variants) == 2


@pytest.mark.parametrize("phenotype", PHENOTYPES)
def test_accessories_sit_near_their_landmarks(phenotype):
    state = BodyState(phenotype=phenotype, accessories=ALL_WORN)
    placed, verts, bones, body = _placed(state)
    frame = accessories.head_frame(verts, bones, body)
    glasses_local = (placed["glasses"] - frame.origin) @ frame.axes
    # rims in front of the eyes (forward = local z), centred between them, within the head's width
    assert glasses_local[:, 2].max() > 0.02
    assert abs(glasses_local[:, 0].mean()) < 0.01
    assert np.abs(glasses_local[:, 1]).max() < 0.04

    hat_local = (placed["hat"] - frame.origin) @ frame.axes
    assert hat_local[:, 1].min() > 0.02  # entirely above the eyes
    assert hat_local[:, 1].max() > frame.top[1]  # the crown covers the head top
    # the crown's elliptical rim (half-width = ear half-distance, depth 1.25x) holds the skull
    head_local = (verts - frame.origin) @ frame.axes
    rim_height = hat_local[:, 1].min() + 0.012
    near_rim = head_local[np.abs(head_local[:, 1] - rim_height) < 0.003]
    half_width = (frame.ear_left[0] - frame.ear_right[0]) / 2
    inside = (near_rim[:, 0] / half_width) ** 2 + ((near_rim[:, 2] - frame.top[2]) / (1.25 * half_width)) ** 2
    assert len(near_rim) > 20 and inside.max() < 1.0

    earrings = placed["earrings"]
    half = len(earrings) // 2
    for ring, lobe in ((earrings[:half], accessories.LEFT_EARLOBE), (earrings[half:], accessories.RIGHT_EARLOBE)):
        assert np.linalg.norm(ring.mean(axis=0) - verts[lobe]) < 0.03

    neck1 = bones[body.bone_index("Neck1")][:3, 3]
    neck2 = bones[body.bone_index("Neck2")][:3, 3]
    assert np.linalg.norm(placed["scarf"].mean(axis=0) - (neck1 + 0.6 * (neck2 - neck1))) < 0.01
    # the scarf encircles the neck: its ring is wider than the neck everywhere
    assert np.linalg.norm(placed["scarf"] - placed["scarf"].mean(axis=0), axis=1).min() > 0.04


def test_accessories_follow_the_head():
    still = BodyState(accessories=ALL_WORN)
    pose = np.zeros((78, 3))
    pose[get_body_model().bone_index("Head")] = [0.4, 0.0, 0.2]  # yaw and pitch
    turned = BodyState(pose=pose, accessories=ALL_WORN)
    (a, verts_a, bones_a, body), (b, verts_b, bones_b, _) = _placed(still), _placed(turned)
    frame_a = accessories.head_frame(verts_a, bones_a, body)
    frame_b = accessories.head_frame(verts_b, bones_b, body)
    local_a = (a["glasses"] - frame_a.origin) @ frame_a.axes
    local_b = (b["glasses"] - frame_b.origin) @ frame_b.axes
    assert np.abs(a["glasses"] - b["glasses"]).max() > 0.01  # moved in the world
    assert np.abs(local_a - local_b).max() < 2e-3  # but stayed put on the face


def test_absent_accessories_collapse_onto_the_head_bone():
    state = BodyState(accessories=("hat_tall",))
    placed, _verts, bones, body = _placed(state)
    head = bones[body.bone_index("Head")][:3, 3]
    for name in ("glasses", "earrings", "scarf"):
        assert np.array_equal(placed[name], np.repeat(head[None], len(placed[name]), axis=0))
    assert np.ptp(placed["hat"], axis=0).max() > 0.1


def test_variants_share_topology_but_differ_in_shape():
    for slot in accessories.slots():
        first, second = slot.variants
        a = _placed(BodyState(accessories=(first,)))[0][slot.name]
        b = _placed(BodyState(accessories=(second,)))[0][slot.name]
        assert a.shape == b.shape == slot.vertices.shape
        assert np.abs(a - b).max() > 2e-3, slot.name


def test_part_scale_shrinks_a_worn_accessory_where_it_is_worn():
    """Glasses shrink about their centre; a scarf thins around the neck, earrings shrink from
    their lobes and a hat's crown lowers on the same band: a smaller accessory is still outside
    the body, where the camera sees it."""
    full = _placed(BodyState(accessories=("glasses_square",)))[0]["glasses"]
    half = _placed(BodyState(accessories=("glasses_square",), part_scale={"eyewear": 0.5}))[0]["glasses"]
    centre = full.mean(axis=0)
    assert np.allclose(half, centre + 0.5 * (full - centre))

    worn = ("scarf_thick", "earrings_hoop", "hat_brimmed")
    full = _placed(BodyState(accessories=worn))[0]
    sizes = {"neckwear": 0.5, "earwear": 0.5, "headwear": 0.5}
    half = _placed(BodyState(accessories=worn, part_scale=sizes))[0]
    verts, bones, body = _pose(BodyState(accessories=worn))
    centre, axis, neck_radius = accessories._neck_ring(verts, bones, body)
    # The scarf gets thinner around the neck and still stands out of it.
    def radial(v):
        rel = v - centre
        return np.linalg.norm(rel - np.outer(rel @ axis, axis), axis=1)

    assert neck_radius + 0.005 < radial(half["scarf"]).max() < radial(full["scarf"]).max()
    assert np.ptp(half["scarf"] @ axis) == pytest.approx(0.5 * np.ptp(full["scarf"] @ axis), rel=0.05)
    # Each earring still hangs from its lobe: the top of each ring stays put.
    for side in (half["earrings"][:, 0] > 0, half["earrings"][:, 0] < 0):
        top = lambda v: v[side][np.argmax(v[side][:, 1])]  # noqa: E731
        assert np.linalg.norm(top(half["earrings"]) - top(full["earrings"])) < 4e-3
    # The hat sits on the same band (the lowest point moves by a few mm: the brim is narrower and
    # the head is slightly tilted), its top half its crown's height lower.
    assert half["hat"][:, 1].min() == pytest.approx(full["hat"][:, 1].min(), abs=5e-3)
    lowered = full["hat"][:, 1].max() - half["hat"][:, 1].max()
    assert lowered == pytest.approx(0.5 * accessories.VARIANTS["hat"]["hat_brimmed"]["crown_height"], abs=5e-3)
    assert accessories.sized("hat", {"brim": 1.6, "crown_height": 0.1}, 0.5) == {"brim": 1.3, "crown_height": 0.05}


def test_placement_is_deterministic():
    state = BodyState(phenotype=PHENOTYPES[1], accessories=ALL_WORN)
    first, second = _placed(state)[0], _placed(state)[0]
    for name in first:
        assert np.array_equal(first[name], second[name])


def test_bad_accessory_names_are_rejected_clearly():
    slot = accessories.slots()[0]
    verts, bones, body = _pose(BodyState())
    with pytest.raises(accessories.AccessoryError, match="unknown accessory 'monocle'"):
        slot.place(BodyState(accessories=("monocle",)), verts, bones, body)
    with pytest.raises(accessories.AccessoryError, match="two accessories in the 'glasses' slot"):
        accessories.check_accessories(("glasses_round", "glasses_square"))
    with pytest.raises(accessories.AccessoryError, match="not an accessory part"):
        accessories.slot_for_part("mouth")


def test_reference_mesh_appends_the_slots():
    from maskscore_core.body.reference_mesh import get_reference_mesh

    mesh = get_reference_mesh()
    extra = sum(len(s.vertices) for s in accessories.slots())
    assert mesh.vertex_count == mesh.anny_vertex_count + extra
    verts = mesh.vertices([BodyState(accessories=("glasses_round",))])[0]
    start, stop = mesh.slot_ranges["glasses"]
    assert np.ptp(verts[start:stop], axis=0).max() > 0.05
    start, stop = mesh.slot_ranges["hat"]
    assert np.ptp(verts[start:stop], axis=0).max() == 0.0
