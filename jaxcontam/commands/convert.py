"""`jaxcontam convert-llama2c`: turn a llama2.c model + tokenizer into a Hugging Face llama directory."""

from __future__ import annotations

import click


@click.command("convert-llama2c")
@click.argument("model_bin", type=click.Path(exists=True, dir_okay=False))
@click.argument("tokenizer_bin", type=click.Path(exists=True, dir_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
def convert_llama2c(model_bin, tokenizer_bin, out_dir):
    """Write OUT_DIR/config.json, model.safetensors and tokenizer files, loadable by jaxcontam and transformers."""
    from jaxcontam.models.llama2c import convert_llama2c as convert

    out = convert(model_bin, tokenizer_bin, out_dir)
    click.echo(f"wrote {out}")
