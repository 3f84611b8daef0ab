"""MaskScore's mesh modality plugin."""

from maskscore_core import hookimpl
from maskscore_core.records import PluginInfo

MODALITY = "mesh"


@hookimpl
def plugin_info():
    return PluginInfo(kind="modality", provides=(MODALITY,))
