"""The deploy/ Dockerfiles (docs/deployment.md): the sharing server's and a Dagster code location's.

Where a Docker engine runs (`docker info` succeeds), each image is built from the wheel and
smoke-tested: the sharing server answers a recipient's token and refuses a request without
one; the code location's gRPC server passes Dagster's health check. Where none runs, that
test skips saying so, and the rest still try each image without Docker: every COPY input
exists, the pins match the lock, and the image's own RUN pip lines, ENV, WORKDIR and entry
command run in a fresh virtualenv of the image's Python built from the wheel
(tests/packaging/dockerfile.py lays the image's files out in a folder). The only changes
to the entry command there: the port (a free one) and the address (loopback, not 0.0.0.0).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.packaging.dockerfile import Dockerfile, Layout
from tests.packaging.test_wheel import _clean_env, _interpreter, _run

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
SHARING = Dockerfile.parse(DEPLOY / "sharing-server.Dockerfile")
CODE_LOCATION = Dockerfile.parse(DEPLOY / "dagster-code-location.Dockerfile")
FEED = """\
feed: trades
warehouse: {warehouse}
source: {{format: json, path: "{data}/{{partition}}/"}}
partitions: {{static: [a]}}
key: [id]
event_time: event_time
tiers:
  realtime: "TRUE"
  delayed_15m: "event_time + INTERVAL 15 MINUTES <= WATERLINE()"
audiences:
  acme: [delayed_15m]
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, token: str | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _wait_for(probe, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while True:
        try:
            return probe()
        except (OSError, AssertionError) as error:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not up after {seconds:.0f} s ({error})") from error
            time.sleep(1)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """dist/ as `python -m build --wheel` leaves it: the Dockerfiles' COPY dist/ input."""
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)], cwd=out, timeout=900)
    assert len(list(out.glob("waterline_tiers-*-py3-none-any.whl"))) == 1, sorted(out.iterdir())
    return out


def _context(dockerfile: Dockerfile, dist: Path, folder: Path) -> Path:
    """The build context: dist/ with the wheel, and the repo's files the Dockerfile copies."""
    for source, _ in dockerfile.copies():
        target = folder / source
        if source.rstrip("/") == "dist":
            shutil.copytree(dist, target, dirs_exist_ok=True)
        else:
            shutil.copytree(REPO / source, target, ignore=shutil.ignore_patterns("__pycache__", ".waterline"))
    return folder


# --- without Docker: the inputs --------------------------------------------------------


@pytest.mark.parametrize("dockerfile", [SHARING, CODE_LOCATION], ids=lambda d: d.path.stem)
def test_every_copy_input_is_in_the_repo_or_the_build(dockerfile):
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for source, _ in dockerfile.copies():
        assert source.rstrip("/") == "dist" or (REPO / source).exists(), f"{dockerfile.path.name}: COPY {source}"
    (install,) = dockerfile.pip_installs()
    wanted = re.findall(r"waterline_tiers-\*\.whl\)\[(\w+)\]", install)
    assert wanted and set(wanted) <= set(extras), (install, sorted(extras))
    assert dockerfile.command(), f"{dockerfile.path.name}: no ENTRYPOINT/CMD in exec form"


def test_the_code_locations_dagster_libraries_match_the_lock():
    """dagster-postgres and dagster-k8s go with the Dagster the wheel resolves; the lock says which."""
    lock = dict(line.split("==") for line in (REPO / "requirements.lock").read_text().split() if "==" in line)
    (install,) = CODE_LOCATION.pip_installs()
    pins = dict(re.findall(r'"(dagster-[\w-]+)==([\w.]+)"', install))
    assert set(pins) == {"dagster-postgres", "dagster-k8s"}
    assert set(pins.values()) == {lock["dagster-pyspark"]}, (pins, lock["dagster-pyspark"])  # the libraries' line


# --- without Docker: the image's own commands in a virtualenv --------------------------


def _image_venv(dockerfile: Dockerfile, dist: Path, root: Path) -> tuple[Layout, dict[str, str]]:
    """The image's files under ``root`` and the environment its entry command sees."""
    python = _interpreter(dockerfile.python_version)
    if python is None:
        pytest.skip(f"no Python {dockerfile.python_version} (the image's) on this machine")
    layout = Layout(root)
    layout.copy_in(dockerfile, _context(dockerfile, dist, root.parent / "context"))
    venv = root / "venv"
    _run([python, "-m", "venv", str(venv)], cwd=root, timeout=120)
    env = _clean_env(PATH=os.pathsep.join([str(venv / "bin"), _clean_env()["PATH"]]))
    for line in dockerfile.pip_installs():
        # --no-cache-dir keeps the image small; here pip's cache saves the downloads
        command = layout.host(line).replace("--no-cache-dir ", "")
        proc = subprocess.run(["bash", "-c", command], cwd=root, env=env, capture_output=True, text=True, timeout=1200)
        assert proc.returncode == 0, f"{command}\n{proc.stderr[-3000:]}"
    env.update({k: layout.host(v) for k, v in dockerfile.env().items()})
    return layout, env


def _entry(dockerfile: Dockerfile, layout: Layout, port: int, image_port: str) -> list[str]:
    command = [layout.host(arg) for arg in dockerfile.command()]
    command = ["127.0.0.1" if arg == "0.0.0.0" else arg for arg in command]
    return [str(port) if arg == image_port else arg for arg in command]


def _start(command: list[str], layout: Layout, dockerfile: Dockerfile, env: dict, log: Path) -> subprocess.Popen:
    workdir = Path(layout.host(dockerfile.last("WORKDIR") or "/"))
    workdir.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        return subprocess.Popen(command, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.heavy(2)
def test_the_sharing_images_entry_command_serves_a_recipient(dist, tmp_path):
    layout, env = _image_venv(SHARING, dist, tmp_path / "image")
    spec = Path(layout.host(SHARING.command()[-1]))  # the CMD's spec, where a volume would mount it
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(FEED.format(warehouse=tmp_path / "warehouse", data=tmp_path / "data"))
    port = _free_port()
    proc = _run(["waterline", "share", "token", "create", "acme", "--spec", str(spec),
                 "--endpoint", f"http://127.0.0.1:{port}"], cwd=tmp_path, timeout=120, PATH=env["PATH"])
    token = json.loads(proc.stdout)["bearerToken"]

    server = _start(_entry(SHARING, layout, port, "8080"), layout, SHARING, env, tmp_path / "serve.log")
    try:
        status, body = _wait_for(lambda: _get(f"http://127.0.0.1:{port}/shares", token), 120, "the sharing server")
        assert (status, [s["name"] for s in body["items"]]) == (200, ["trades"]), body
        status, body = _get(f"http://127.0.0.1:{port}/shares/trades/schemas/tiers/tables", token)
        assert (status, [t["name"] for t in body["items"]]) == (200, ["delayed_15m"]), body  # acme's tier only
        assert _get(f"http://127.0.0.1:{port}/shares")[0] == 401
    finally:
        _stop(server)
    assert "recipient=acme GET /shares status=200" in (tmp_path / "serve.log").read_text()


@pytest.mark.heavy(4)
def test_the_code_location_images_entry_command_serves_definitions(dist, tmp_path):
    layout, env = _image_venv(CODE_LOCATION, dist, tmp_path / "image")
    env.pop("DAGSTER_HOME", None)
    port = _free_port()
    server = _start(_entry(CODE_LOCATION, layout, port, "3030"), layout, CODE_LOCATION, env, tmp_path / "server.log")
    bin_ = Path(env["PATH"].split(os.pathsep)[0])

    def healthy() -> None:
        assert server.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
        proc = subprocess.run([str(bin_ / "dagster"), "api", "grpc-health-check", "-p", str(port)], env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    try:
        _wait_for(healthy, 300, "the code server")
        proc = _run([str(bin_ / "dagster"), "job", "list", "--grpc-host", "127.0.0.1", "--grpc-port", str(port)],
                    cwd=tmp_path, timeout=300, PATH=env["PATH"])
    finally:
        _stop(server)
    jobs = re.findall(r"^Job: (\w+)$", proc.stdout, flags=re.M)
    assert {"ticks_release", "ticks_ingest", "indicators_release", "indicators_ingest"} <= set(jobs), proc.stdout


# --- with Docker: build and smoke-test each image --------------------------------------


def _docker_engine() -> str | None:
    """Why images cannot be built here, or None when `docker info` succeeds."""
    docker = shutil.which("docker")
    if docker is None:
        return "no docker client on PATH"
    proc = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"no Docker engine (`docker info` failed: {reason})"
    return None


@pytest.fixture
def docker_engine() -> None:
    """Skips (before the wheel is built) where no Docker engine runs."""
    reason = _docker_engine()
    if reason is not None:
        pytest.skip(f"{reason}: the deploy/ images are not built here; the tests above ran their "
                    "entry commands from the wheel in a virtualenv instead")


@pytest.mark.heavy(6)
def test_the_images_build_and_start_in_docker(docker_engine, dist, tmp_path):
    tags = {}
    for name, dockerfile in (("sharing", SHARING), ("code-location", CODE_LOCATION)):
        context = _context(dockerfile, dist, tmp_path / name)
        tags[name] = f"waterline-test-{name}:{os.getpid()}"
        _run(["docker", "build", "-q", "-f", str(dockerfile.path), "-t", tags[name], str(context)],
             cwd=tmp_path, timeout=1800)
    try:
        _smoke_sharing_container(tags["sharing"], tmp_path)
        _smoke_code_location_container(tags["code-location"])
    finally:
        subprocess.run(["docker", "image", "rm", "-f", *tags.values()], capture_output=True, timeout=120)


def _smoke_sharing_container(tag: str, tmp_path: Path) -> None:
    shared = tmp_path / "shared"  # mounted at the same path, so the spec's warehouse is one folder
    (shared / "feeds").mkdir(parents=True)
    shared.chmod(0o777)
    (shared / "feeds" / "feed.yaml").write_text(FEED.format(warehouse=shared / "warehouse", data=shared / "data"))
    port = _free_port()
    volume = ["-v", f"{shared}:{shared}"]
    proc = _run(["docker", "run", "--rm", *volume, "--entrypoint", "waterline", tag, "share", "token", "create",
                 "acme", "--spec", f"{shared}/feeds/feed.yaml"], cwd=tmp_path, timeout=300)
    token = json.loads(proc.stdout)["bearerToken"]
    container = _run(["docker", "run", "-d", "-p", f"127.0.0.1:{port}:8080", *volume, tag,
                      f"{shared}/feeds/feed.yaml"], cwd=tmp_path, timeout=120).stdout.strip()
    try:
        status, body = _wait_for(lambda: _get(f"http://127.0.0.1:{port}/shares", token), 120, "the sharing container")
        assert (status, [s["name"] for s in body["items"]]) == (200, ["trades"]), body
        assert _get(f"http://127.0.0.1:{port}/shares")[0] == 401
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, timeout=120)


def _smoke_code_location_container(tag: str) -> None:
    container = _run(["docker", "run", "-d", tag], cwd=REPO, timeout=120).stdout.strip()
    try:
        def healthy() -> None:
            proc = subprocess.run(["docker", "exec", container, "dagster", "api", "grpc-health-check", "-p", "3030"],
                                  capture_output=True, text=True, timeout=60)
            assert proc.returncode == 0, proc.stdout + proc.stderr

        _wait_for(healthy, 300, "the code location container")
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, timeout=120)
