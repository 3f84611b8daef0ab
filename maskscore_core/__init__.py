"""MaskScore: self-supervised, multimodal edit scoring by render-and-compare on the ANNY mesh.

Plugins import `hookimpl` and the objects they register from here; everything else lives in its
own module.
"""

from .hookspecs import hookimpl
from .registration import Column, Editor, Modality, Scorer, Source, Trainer

__all__ = ["Column", "Editor", "Modality", "Scorer", "Source", "Trainer", "hookimpl"]
