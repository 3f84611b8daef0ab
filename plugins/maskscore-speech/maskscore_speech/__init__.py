"""MaskScore's speech modality plugin."""

from maskscore_core import hookimpl
from maskscore_core.records import PluginInfo

MODALITY = "speech"


@hookimpl
def plugin_info():
    return PluginInfo(kind="modality", provides=(MODALITY,))
