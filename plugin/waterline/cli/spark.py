"""`waterline spark start|stop|status`: a local standalone cluster and Spark Connect server.

On 127.0.0.1 only, from the pip-installed pyspark; state under ``.waterline/spark``
(see `waterline.local.cluster`).
"""

from __future__ import annotations

import click

from waterline.local import cluster
from waterline.local.cluster import DEFAULT_STATE_DIR

_DIR = click.option("--dir", "state_dir", default=DEFAULT_STATE_DIR, show_default=True,
                    help="Folder for logs, pid files and cluster.json.")


@click.group("spark")
def spark_group() -> None:
    """A local Spark cluster and Spark Connect server on 127.0.0.1."""


@spark_group.command("start")
@_DIR
@click.option("--workers", default=2, show_default=True, type=click.IntRange(0, 16),
              help="Standalone workers (0: no master, no workers).")
@click.option("--worker-cores", default=1, show_default=True, type=click.IntRange(1, 64))
@click.option("--worker-memory", default="1g", show_default=True)
@click.option("--master-port", type=int, help="Master port (default: a free one).")
@click.option("--connect/--no-connect", default=True, show_default=True, help="Also start a Spark Connect server.")
@click.option("--connect-port", type=int, help="Spark Connect port (default: a free one).")
@click.option("--connect-master", default="local[2]", show_default=True,
              help="The Connect server's master: local[N], or 'cluster' for the standalone master started here.")
def start(state_dir, workers, worker_cores, worker_memory, master_port, connect, connect_port, connect_master) -> None:
    """Start the master, workers and Connect server; print their URLs."""
    state = cluster.start(state_dir, workers=workers, worker_cores=worker_cores, worker_memory=worker_memory,
                          master_port=master_port, connect=connect, connect_port=connect_port,
                          connect_master=connect_master)
    for line in cluster.describe(state):
        click.echo(line)


@spark_group.command("stop")
@_DIR
def stop(state_dir) -> None:
    """Stop what `waterline spark start` started."""
    stopped = cluster.stop(state_dir)
    click.echo(f"stopped: {', '.join(stopped)}" if stopped else "nothing to stop")


@spark_group.command("status")
@_DIR
def status(state_dir) -> None:
    """Print the URLs and whether each process runs."""
    for line in cluster.describe(cluster.ClusterState.load(state_dir)):
        click.echo(line)
