"""`fast_tokenizer` loads a folder saved with transformers' generic fast class by that class, without importing
`AutoTokenizer` (and torch through it), exactly where `AutoTokenizer` itself would pick that class."""

import json
import shutil

import pytest

from jaxcontam.audit.config import EXAMPLE_CONFIG
from jaxcontam.models.families import FAMILIES
from jaxcontam.models.tokenizer_files import GENERIC_CLASS, OVERRIDDEN_MODEL_TYPES, fast_tokenizer

BUNDLED = EXAMPLE_CONFIG.parent / "model"
TEXTS = ["Question: Natalia sold clips to 48 of her friends.\nAnswer:", "  two  spaces, <|eos|> and ünïcode", ""]


def test_the_overridden_model_types_are_transformers_own():
    from transformers.models.auto.tokenization_auto import (
        MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS,
        TOKENIZER_MAPPING_NAMES,
    )

    generic = (GENERIC_CLASS, "PythonBackend", "PreTrainedTokenizerFast")
    overridden = {
        model_type
        for model_type in FAMILIES
        if (registered := TOKENIZER_MAPPING_NAMES.get(model_type)) is not None
        and (
            (model_type in MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS and registered.removesuffix("Fast") not in generic)
            or registered == "MistralCommonBackend"
        )
    }
    assert overridden == set(OVERRIDDEN_MODEL_TYPES)


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "gemma"])
def test_the_same_tokenizer_as_autotokenizer(tmp_path, model_type):
    from transformers import AutoTokenizer

    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(BUNDLED / name, tmp_path / name)
    (tmp_path / "config.json").write_text(
        json.dumps({**json.loads((BUNDLED / "config.json").read_text()), "model_type": model_type})
    )
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["tokenizer_class"] == GENERIC_CLASS
    ours, theirs = fast_tokenizer(str(tmp_path)), AutoTokenizer.from_pretrained(str(tmp_path), use_fast=True)
    assert type(ours) is type(theirs)
    for text in TEXTS:
        assert ours(text)["input_ids"] == theirs(text)["input_ids"]
        assert ours.decode(ours.encode(text)) == theirs.decode(theirs.encode(text))
    assert (ours.bos_token_id, ours.eos_token_id, ours.pad_token_id) == (
        theirs.bos_token_id,
        theirs.eos_token_id,
        theirs.pad_token_id,
    )


def test_the_bundled_tokenizer_loads_without_importing_torch():
    import subprocess
    import sys

    code = (
        "import sys; from jaxcontam.models.tokenizer_files import fast_tokenizer; "
        f"fast_tokenizer({str(BUNDLED)!r}); print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", done.stderr[-2000:]
