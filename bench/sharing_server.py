"""A sharing server for `bench.sharing`'s process mode, with the access log table on or off.

`waterline share serve` as its code runs it (`SharingServer`, `waterline.sharing.app.run`), plus
``--no-access-records``, which the CLI does not have: the records are the compliance trail,
so a served feed always writes them. Only the bench turns them off, to measure their cost.

Usage: python -m bench.sharing_server SPEC --port N --store FILE [--no-access-records]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from waterline.sharing.app import run  # noqa: E402
from waterline.sharing.server import SharingServer  # noqa: E402
from waterline.sharing.tokens import TokenStore  # noqa: E402
from waterline.spec import load_spec  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sharing_server", description=__doc__.split("\n")[0])
    parser.add_argument("spec", type=Path)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--no-access-records", action="store_true")
    args = parser.parse_args(argv)
    server = SharingServer([load_spec(args.spec)], TokenStore(args.store), url_ttl_seconds=600)
    run(server, host="127.0.0.1", port=args.port, record_access=not args.no_access_records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
