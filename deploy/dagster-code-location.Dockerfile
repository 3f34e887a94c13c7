# A Dagster code location of waterline feeds, for the Dagster Helm chart's user-code
# deployments or a Dagster+ hybrid agent (docs/deployment.md). Here the demo project
# (examples/dagster_project); a data team copies its own project in its place.
#
#   python -m build --wheel                    # dist/waterline_tiers-<version>-py3-none-any.whl
#   docker build -f deploy/dagster-code-location.Dockerfile -t waterline-code-location .
#
# The image serves the definitions (gRPC, port 3030) and runs them: with the Helm chart's
# K8sRunLauncher each run is a pod of this image, so it carries dagster-postgres (the
# instance's storage) and dagster-k8s (the launcher) at the chart's version, and a Java
# runtime for a run's local Spark driver (not needed when WATERLINE_SPARK_REMOTE points
# at a Spark Connect server).
FROM python:3.12-slim-bookworm

RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*

COPY dist/ /tmp/dist/
RUN pip install --no-cache-dir "$(ls /tmp/dist/waterline_tiers-*.whl)[dagster]" \
    "dagster-postgres==0.29.27" "dagster-k8s==0.29.27" && rm -rf /tmp/dist

# The demo's components name the repo's specs two folders above the project, and the specs'
# `job:` steps import spark_jobs: the three keep the repo's layout under /opt/waterline.
COPY dags/feeds /opt/waterline/dags/feeds
COPY spark_jobs /opt/waterline/spark_jobs
COPY examples/dagster_project /opt/waterline/examples/dagster_project
ENV PYTHONPATH=/opt/waterline/examples/dagster_project:/opt/waterline
WORKDIR /opt/waterline/examples/dagster_project

EXPOSE 3030
CMD ["dagster", "code-server", "start", "-h", "0.0.0.0", "-p", "3030", "-m", "waterline_demo.definitions"]
