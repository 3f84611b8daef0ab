"""The body model skins with anny's torch skinning (`anny_model.SKINNING`): no code path of
posing a body or labelling its parts loads Warp, whose libraries would take about 200 MB of
every process (docs/architecture.md, "The reference frame")."""

from __future__ import annotations

import json
import subprocess
import sys


def test_posing_a_body_and_labelling_its_parts_never_load_warp():
    script = (
        "import json, sys\n"
        "from maskscore_core.body import parts\n"
        "from maskscore_core.body.anny_model import get_body_model\n"
        "from maskscore_core.plugin.records import BodyState\n"
        "vertices = get_body_model().vertices([BodyState()])\n"
        "labels = parts._uv_labels()\n"
        "print(json.dumps([vertices.shape[1], len(labels), 'warp' in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    vertex_count, label_count, warp_loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert vertex_count == 18056 and label_count > 0
    assert warp_loaded is False
