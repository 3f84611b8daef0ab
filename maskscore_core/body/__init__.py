"""The common reference: the ANNY body model, its parts, accessories and the reference mesh every modality decodes to."""
