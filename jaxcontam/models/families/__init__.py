"""The model families, by Hugging Face model_type (`FAMILIES`): each module of this package is the family of the
model_type it is named after (its config reader, checkpoint name table and GGUF specifics: `base.Family`); the shared
decoder core runs them all. The modules are found here, not listed, and imported on first use; installed packages add
theirs through the `jaxcontam.families` entry-point group. Adding a family is one module (docs/adding_a_family.md).
"""

from __future__ import annotations

import pkgutil

from jaxcontam.errors import ModelError
from jaxcontam.models.families.base import Family
from jaxcontam.registry import Registry

FAMILIES: Registry[Family] = Registry(
    "model family", Family, name_of=lambda family: family.model_type, group="jaxcontam.families", error=ModelError
)
for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        FAMILIES.lazy(_module.name, f"{__name__}.{_module.name}:FAMILY")
FAMILIES.protect()
