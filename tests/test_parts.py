"""Part masks: non-empty, where they belong on the head, overlapping only as declared."""

from __future__ import annotations

import itertools

import attrs
import numpy as np
import pytest

from maskscore_core import vocab

from maskscore_core.body import parts
from maskscore_core.body.anny_model import get_body_model
from maskscore_core.plugin.records import BodyState
from maskscore_core.body.reference_mesh import get_reference_mesh

FACE_PARTS = vocab.ACTIVE_FACE_PARTS


@pytest.fixture(scope="module")
def rest():
    """Neutral default subject: reference-mesh vertices and SOMA bone positions."""
    body = get_body_model()
    out = body.forward([BodyState()])
    bones = {name: out["bone_poses"][0][i, :3, 3] for i, name in enumerate(body.bone_names)}
    return out["vertices"][0], bones


def centroid(part, rest):
    vertices, bones = rest
    return vertices[parts.part_vertex_ids(part)].mean(axis=0) - bones["Head"]


def test_action_names_are_the_body_models():
    assert parts.FACIAL_ACTION_NAMES == get_body_model().action_names


def test_every_active_part_has_vertices_and_faces():
    mesh = get_reference_mesh()
    for part in FACE_PARTS:
        ids = parts.part_vertex_ids(part)
        assert ids.dtype == np.int64 and len(ids) > 0, part
        assert np.all(np.diff(ids) > 0) and ids[0] >= 0 and ids[-1] < mesh.anny_vertex_count, part
        faces = parts.part_face_mask(part)
        assert faces.shape == (len(mesh.faces),) and faces.dtype == bool and faces.any(), part
        # A face is in the part exactly when all three of its vertices are.
        inside = np.isin(mesh.faces, ids).all(axis=1)
        assert np.array_equal(faces, inside), part


def test_parts_sit_where_they_belong_on_the_head(rest):
    c = {part: centroid(part, rest) for part in FACE_PARTS}
    _, bones = rest
    eye_y = (bones["LeftEye"][1] + bones["RightEye"][1]) / 2 - bones["Head"][1]
    x, y, z = 0, 1, 2
    assert c["mouth"][y] < c["nose"][y] < eye_y  # mouth below nose below the eyes
    assert c["eyebrow"][y] > eye_y + 0.005  # brows above the eyes
    assert c["eyebrow"][y] > c["irides"][y] and c["eyebrow"][y] > c["eyewhite"][y]
    assert c["neck"][y] < c["mouth"][y] and c["neck"][y] < 0  # neck below the head
    assert c["back hair"][z] < c["ears"][z] < c["front hair"][z]  # back hair behind, front hair ahead
    assert c["front hair"][y] > c["eyebrow"][y]
    for part in ("nose", "mouth", "eyebrow", "irides", "eyewhite", "eyelash"):
        assert c[part][z] > c["ears"][z] + 0.05, part  # facial features are on the front
        assert abs(c[part][x]) < 0.005, part  # and left/right balanced
    vertices, _ = rest
    ears = vertices[parts.part_vertex_ids("ears")] - bones["Head"]
    face = vertices[parts.part_vertex_ids("face")] - bones["Head"]
    assert (ears[:, x] > 0).any() and (ears[:, x] < 0).any()  # both ears
    assert np.abs(ears[:, x]).min() > np.abs(face[:, x]).max()  # lateral of the whole face
    for eye in ("LeftEye", "RightEye"):  # each eye has iris and eye surface within 2 cm
        for part in ("irides", "eyewhite"):
            d = np.linalg.norm(vertices[parts.part_vertex_ids(part)] - bones[eye], axis=1)
            assert (d < 0.02).any(), (eye, part)


def test_overlaps_only_as_declared():
    declared = parts.declared_overlaps()
    for a, b in itertools.combinations(FACE_PARTS, 2):
        shared = np.intersect1d(parts.part_vertex_ids(a), parts.part_vertex_ids(b))
        key = tuple(sorted((a, b)))
        if key not in declared:
            assert len(shared) == 0, f"{a} and {b} share {len(shared)} vertices without a declared overlap"
    for (a, b), how in declared.items():
        outer, inner = (a, b) if how.startswith(a) else (b, a)
        assert np.isin(parts.part_vertex_ids(inner), parts.part_vertex_ids(outer)).all(), how


def test_unknown_and_inactive_parts_are_refused_clearly():
    with pytest.raises(parts.PartError, match="unknown part 'hair'.*front hair"):
        parts.part_vertex_ids("hair")
    for inactive in ("topwear", "handwear", "bottomwear", "legwear", "footwear", "tail", "wings", "objects"):
        with pytest.raises(parts.PartError, match="not active for this data"):
            parts.check_active(inactive)
        with pytest.raises(parts.PartError, match="not active"):
            parts.part_actions(inactive)
    assert set(parts.PART_SPECS) == set(vocab.ACTIVE_FACE_PARTS + vocab.ACCESSORY_PARTS)


def test_specs_name_real_actions_and_bones():
    body = get_body_model()
    for part, spec in parts.PART_SPECS.items():
        assert spec.name == part and spec.description
        assert set(spec.actions) <= set(body.action_names), part
        assert set(spec.bones) <= set(body.bone_names), part
    assert "jawOpen" in parts.part_actions("mouth") and "tongueOut" in parts.part_actions("mouth")
    assert parts.part_bones("mouth") == ("Jaw",) and parts.part_bones("neck") == ("Neck1", "Neck2")
    assert all(a.startswith("brow") for a in parts.part_actions("eyebrow"))
    assert all(a.startswith("eyeLook") for a in parts.part_actions("irides"))
    assert len(parts.part_actions("face")) == 52
    assert parts.part_actions("ears") == () and parts.part_actions("headwear") == ()


def test_a_parts_actions_move_mostly_that_part(rest):
    """Most vertices an action set moves strongly (> half its largest displacement) belong to the
    part those actions define, and (nearly) all of them to the face."""
    body = get_body_model()
    vertices, _ = rest
    defining = {"mouth": ("mouth",), "eyebrow": ("brow",), "eyelash": ("eyeBlink",),
                "irides": ("eyeLookIn", "eyeLookOut"), "nose": ("noseSneer",)}
    for part, prefixes in defining.items():
        names = [a for a in parts.part_actions(part) if a.startswith(prefixes)]
        assert names, part
        expression = np.zeros(52)
        expression[[body.action_index(a) for a in names]] = 1.0
        moved = np.linalg.norm(body.vertices([BodyState(expression=expression)])[0] - vertices, axis=1)
        strong = np.flatnonzero(moved > 0.5 * moved.max())
        assert np.isin(strong, parts.part_vertex_ids(part)).mean() >= 0.5, part
        assert np.isin(strong, parts.part_vertex_ids("face")).mean() >= 0.9, part
    # Hair, ears and neck are outside the face: no facial action moves them much.
    expression = np.ones(52)
    moved = np.linalg.norm(body.vertices([BodyState(expression=expression)])[0] - vertices, axis=1)
    for part in ("front hair", "back hair", "ears"):
        assert moved[parts.part_vertex_ids(part)].max() < 0.01, part


def test_derivation_is_deterministic_and_matches_the_cache():
    cached = parts.anny_part_vertex_ids()
    fresh = parts._derive_anny_parts()
    assert sorted(fresh) == sorted(cached)
    for part in fresh:
        assert np.array_equal(fresh[part], cached[part]), part


def test_accessory_parts_map_to_their_slots():
    mesh = get_reference_mesh()
    for part in vocab.ACCESSORY_PARTS:
        slots = [s for s in mesh.slots if s.part == part]
        if not slots:
            with pytest.raises(parts.PartError, match="no accessory slot"):
                parts.part_vertex_ids(part)
            continue
        ids = parts.part_vertex_ids(part)
        start, stop = mesh.slot_ranges[slots[0].name]
        assert ids.min() >= mesh.anny_vertex_count and np.array_equal(ids, np.arange(start, stop))
        faces = parts.part_face_mask(part)
        assert faces.any() and not faces[: mesh.anny_face_count].any()


@pytest.fixture(scope="module")
def front_render():
    from maskscore_core.metric.render import get_renderer
    from maskscore_core.metric.views import ViewConfig

    mesh = get_reference_mesh()
    vertices = mesh.vertices([BodyState()])[0]
    return get_renderer(ViewConfig(count=4, resolution=128)).render(vertices)


def test_pixel_masks_come_from_the_face_id_pass(front_render):
    coverage = front_render.coverage
    masks = {part: parts.pixel_mask(front_render, part) for part in FACE_PARTS}
    declared = parts.declared_overlaps()
    for part, mask in masks.items():
        assert mask.shape == coverage.shape and mask.dtype == bool
        assert mask.any(), f"{part} is visible in no view"
        assert not (mask & ~coverage).any(), part  # never on background
        faces = parts.part_face_mask(part)
        assert np.array_equal(mask, coverage & faces[np.where(coverage, front_render.face_id, 0)]), part
    for a, b in itertools.combinations(FACE_PARTS, 2):
        if tuple(sorted((a, b))) not in declared:
            assert not (masks[a] & masks[b]).any(), (a, b)
    # View 0 looks at the face from the front: the facial features are there.
    for part in ("mouth", "nose", "eyebrow", "irides", "eyewhite"):
        assert masks[part][0].any(), part


def test_pixel_mask_refuses_a_render_of_another_mesh(front_render):
    bad = attrs.evolve(front_render, face_id=np.where(front_render.coverage, 10**7, -1).astype(np.int32))
    with pytest.raises(parts.PartError, match="another mesh"):
        parts.pixel_mask(bad, "mouth")
    with pytest.raises(parts.PartError, match="not active"):
        parts.pixel_mask(front_render, "wings")
