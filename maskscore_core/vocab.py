"""The shared vocabularies of the design (docs/design.md): parts, task types, dimensions.

Every table, instruction and plugin speaks these names; keeping them in one module means a
typo anywhere is caught by one lookup that names the valid choices. Modalities are not a
vocabulary: they are whatever the installed plugins register (`plugins.modality_names()`).
"""

from __future__ import annotations

# bodytags_v3.json, in the design's order (23 categories).
PARTS: tuple[str, ...] = (
    "front hair",
    "back hair",
    "headwear",
    "face",
    "irides",
    "eyebrow",
    "eyewhite",
    "eyelash",
    "eyewear",
    "ears",
    "earwear",
    "nose",
    "mouth",
    "neck",
    "neckwear",
    "topwear",
    "handwear",
    "bottomwear",
    "legwear",
    "footwear",
    "tail",
    "wings",
    "objects",
)

# The 11 parts that face data (SpeakingFaces, the built-in ANNY source) activates.
ACTIVE_FACE_PARTS: tuple[str, ...] = (
    "front hair",
    "back hair",
    "face",
    "irides",
    "eyebrow",
    "eyewhite",
    "eyelash",
    "ears",
    "nose",
    "mouth",
    "neck",
)

# Accessory parts: not on the ANNY body; the built-in source adds procedural accessories so the
# Part group of task types can be built.
ACCESSORY_PARTS: tuple[str, ...] = ("headwear", "earwear", "eyewear", "neckwear")

# The design announces "13 task types" but its table lists 14 names (3 + 4 + 3 + 4; EditScore's own
# groups hold 3 + 4 + 2 + 4 = 13). We keep every name the table gives rather than guess which one
# to drop; docs/architecture.md records the discrepancy.
TASK_GROUPS: dict[str, tuple[str, ...]] = {
    "part": ("part_add", "part_remove", "part_replace"),
    "surface": ("expression_change", "surface_edit", "lighting_change", "skin_tone"),
    "region": ("depth_edit", "region_extract", "background_change"),
    "motion": ("pose_change", "speech_edit", "temporal_edit", "cross_modal_compose"),
}

TASK_TYPES: tuple[str, ...] = tuple(t for group in TASK_GROUPS.values() for t in group)

# Parts each group of task types edits (docs/design.md, "Task types and dimensions").
GROUP_PARTS: dict[str, tuple[str, ...]] = {
    "part": ("headwear", "earwear", "eyewear", "neckwear"),
    "surface": ("face", "mouth", "eyebrow", "irides", "nose"),
    "region": ("front hair", "back hair", "ears", "neck"),
    "motion": ("mouth", "face", "eyebrow", "irides", "neck"),
}

DIMENSIONS: tuple[str, ...] = ("instruction_following", "consistency", "overall")


class VocabularyError(ValueError):
    """A name that is not in one of the design's vocabularies."""


def _check(kind: str, name: str, allowed: tuple[str, ...]) -> str:
    if name not in allowed:
        raise VocabularyError(f"unknown {kind} {name!r}; expected one of: {', '.join(allowed)}")
    return name


def check_modality(name: str) -> str:
    """`name`, if an installed plugin registered that modality (`plugins.check_modality`)."""
    from maskscore_core.plugin import manager as plugins

    return plugins.check_modality(name)



def check_part(name: str) -> str:
    return _check("part", name, PARTS)


def check_task_type(name: str) -> str:
    return _check("task type", name, TASK_TYPES)


def check_dimension(name: str) -> str:
    return _check("dimension", name, DIMENSIONS)


def task_group(task_type: str) -> str:
    """The group (part, surface, region, motion) a task type belongs to."""
    check_task_type(task_type)
    return next(g for g, types in TASK_GROUPS.items() if task_type in types)
