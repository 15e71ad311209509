"""`--config FILE` and `--set KEY=VALUE` for the commands whose settings are their options (all but `audit`
and `pacost`, which read the audit TOML, `commands.audit_options`).

The file's top-level keys are the command's long option names with underscores (`max_new_tokens = 32`,
`benchmark = ["copa"]`); `--set` overrides them (`--set k=0.3`, read as `dataclass_config` reads any override);
options given on the command line win over both. Values pass through each option's own type, so a wrong one is
refused as the option itself would refuse it, and an unknown key is refused naming the known ones.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import click

from jaxcontam.dataclass_config import apply_overrides
from jaxcontam.errors import JaxcontamError

_RAW, _SETS = "jaxcontam.config_file", "jaxcontam.config_sets"


def _key(param: click.Parameter) -> str | None:
    longest = max((o for o in param.opts if o.startswith("--")), key=len, default=None)
    return None if longest is None else longest[2:].replace("-", "_")


def _read(path: str) -> dict:
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise JaxcontamError(f"--config {path}: cannot read it ({error.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise JaxcontamError(f"--config {path}: not valid TOML ({error})") from None


def _update_defaults(ctx: click.Context) -> None:
    """ctx.default_map from the file and the overrides so far: click then uses them for options not given."""
    values = apply_overrides(ctx.meta.get(_RAW, {}), ctx.meta.get(_SETS, ()))
    pairs = [(_key(p), p.name) for p in ctx.command.params]
    names = {key: name for key, name in pairs if key is not None and key not in ("config", "set", "help")}
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise JaxcontamError(
            f"{ctx.command_path}: unknown setting(s) {', '.join(unknown)} in --config/--set; "
            f"known: {', '.join(sorted(names))}"
        )
    ctx.default_map = {names[key]: value for key, value in values.items()}


def _on_config(ctx: click.Context, _param, value):
    if value is not None:
        ctx.meta[_RAW] = _read(value)
        _update_defaults(ctx)
    return value


def _on_set(ctx: click.Context, _param, value):
    if value:
        ctx.meta[_SETS] = value
        _update_defaults(ctx)
    return value


def config_file_options(command: click.Command) -> click.Command:
    """Add --config and --set (processed before the other options, whose defaults they replace)."""
    command.params[:0] = [
        click.Option(
            ["--config"],
            type=click.Path(dir_okay=False),
            default=None,
            is_eager=True,
            expose_value=False,
            callback=_on_config,
            help="TOML file of this command's options by their long names "
            "(max_new_tokens = 32); options given here win over it.",
        ),
        click.Option(
            ["--set", "overrides"],
            multiple=True,
            metavar="KEY=VALUE",
            is_eager=True,
            expose_value=False,
            callback=_on_set,
            help="Override one setting of --config (or set it without one): "
            "--set k=0.3. Repeatable; options given here win over it.",
        ),
    ]
    return command
