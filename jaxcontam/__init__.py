"""jaxcontam: audit language models for benchmark contamination, in JAX.

Heavy submodules (models, engine, n-gram) import JAX lazily so that the command
line and the data layer start fast.
"""

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "AuditCallback",
    "JaxcontamError",
    "JaxcontamWarning",
    "LanguageModel",
    "Model",
    "ModelInterface",
    "from_fn",
    "load_model",
]

import typing as _typing

from jaxcontam.errors import JaxcontamError, JaxcontamWarning

if _typing.TYPE_CHECKING:  # the names `__getattr__` imports on first use, for type checkers
    from jaxcontam.detect.audit_callback import AuditCallback
    from jaxcontam.functional import from_fn
    from jaxcontam.language_model import LanguageModel, ModelInterface
    from jaxcontam.models.model import Model


def load_model(path_or_id, dtype="float32", mesh=None, fsdp=False, attention="auto"):
    """Load a Hugging Face decoder checkpoint into a jaxcontam model (see `jaxcontam.models`); `mesh` places it
    (`jaxcontam.mesh.make_mesh(data, model)`), `fsdp=True` also splits each weight over the mesh's "data" axis,
    `attention` forces an attention path ("jnp", "splash", "cudnn"; default "auto": by platform)."""
    from jaxcontam.models.loading import load_model as _load_model

    return _load_model(path_or_id, dtype=dtype, mesh=mesh, fsdp=fsdp, attention=attention)


def __getattr__(name: str):
    """`jaxcontam.LanguageModel`, `ModelInterface`, `Model`, `from_fn` and `AuditCallback`, imported on first use
    (they bring JAX in)."""
    if name in ("LanguageModel", "ModelInterface"):
        from jaxcontam import language_model

        return getattr(language_model, name)
    if name == "from_fn":
        from jaxcontam.functional import from_fn

        return from_fn
    if name == "Model":
        from jaxcontam.models.model import Model

        return Model
    if name == "AuditCallback":
        from jaxcontam.detect.audit_callback import AuditCallback

        return AuditCallback
    raise AttributeError(f"module 'jaxcontam' has no attribute {name!r}")
