"""The demo Dagster code location: every feed spec in dags/feeds/.

    dagster dev -m dags               # from the repo root (or `make dev`)
    dagster definitions validate -m dags

Relative paths in the specs (sources under .waterline/data, the warehouse
.waterline/warehouse) resolve against the repo root, whatever the working
directory. Demo data: `python -c "from waterline.demo_data import write_demo_data; write_demo_data()"`
or `waterline demo`. The release sensors start running with the location.
"""

from pathlib import Path

from dagster import DefaultSensorStatus

from waterline.dagster import definitions_from_specs

REPO_ROOT = Path(__file__).resolve().parent.parent
FEEDS = sorted((Path(__file__).resolve().parent / "feeds").glob("*.yaml"))

defs = definitions_from_specs(FEEDS, base_dir=REPO_ROOT, default_sensor_status=DefaultSensorStatus.RUNNING)
