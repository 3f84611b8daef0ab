"""MaskScore: self-supervised, multimodal edit scoring by render-and-compare on the ANNY mesh.

Plugins import `hookimpl` and the objects they register from here; everything else lives in its
own module.
"""

from maskscore_core.plugin.hookspecs import hookimpl
from maskscore_core.plugin.registration import Column, Editor, Modality, Scorer, Source, Trainer

__all__ = ["Column", "Editor", "Modality", "Scorer", "Source", "Trainer", "hookimpl"]
