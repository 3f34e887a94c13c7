"""`waterline share serve|token`: deliver tiers to audiences over Delta Sharing.

    waterline share serve SPEC... [--host 127.0.0.1] [--port N]
    waterline share token create SPEC... RECIPIENT [--expires 30d]   # prints the profile file
    waterline share token list SPEC... [--recipient R] [--json]
    waterline share token revoke SPEC... RECIPIENT [--id ID]
    waterline share entitlements SPEC... --at TIME [--json]

SPEC comes first, as in every other verb. The token verbs' ``--spec SPEC`` (before 0.9.0 the
only way) still works for one release, with a warning; RECIPIENT is then the one positional
argument (``list``: the optional filter).

The token store is ``<warehouse>/_wl_sharing/tokens.json`` of the (first) spec's
warehouse (a file for a local one, an object for an S3 one), or ``--store PATH|s3://...``.
See docs/sharing.md.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict

import click

from waterline.cli.options import deprecated
from waterline.clock import duration_us, format_instant, parse_duration, parse_instant
from waterline.errors import WaterlineError
from waterline.extras import require
from waterline.sharing.entitlements import entitled_at
from waterline.sharing.protocol import ShareError, check_bind
from waterline.sharing.tokens import TokenStore, default_store_path, profile
from waterline.spec import load_specs

_STORE = click.option("--store", "store_path", type=click.Path(dir_okay=False),
                      help="Token store: a file or an s3:// object (default: <warehouse>/_wl_sharing/tokens.json "
                           "of the spec).")


def _specs(paths):
    return load_specs(paths)


def _store(specs, store_path):
    return TokenStore(store_path or default_store_path(specs[0]))


@click.group("share")
def share_group() -> None:
    """Serve tiers to their audiences over Delta Sharing; manage recipients' tokens."""


@share_group.command("serve")
@click.argument("specs", nargs=-1, required=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), help="TLS certificate (PEM).")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), help="TLS private key (PEM).")
@click.option("--insecure", is_flag=True, help="Allow plain HTTP on a non-loopback address (behind a TLS proxy).")
@click.option("--url-ttl", default=900, show_default=True, type=click.IntRange(10, 7 * 86400),
              help="Seconds a file URL stays valid.")
@_STORE
def serve(specs, host, port, tls_cert, tls_key, insecure, url_ttl, store_path) -> None:
    """Serve the tiers of SPEC... (one share per feed) until interrupted."""
    # uvicorn and starlette cost ~90 ms at import and only `serve` needs them: every other
    # `waterline` command (and shell completion) would pay it at module level.
    require("waterline share serve", "starlette", "uvicorn")
    from waterline.sharing.app import run
    from waterline.sharing.server import SharingServer

    if bool(tls_cert) != bool(tls_key):
        raise click.UsageError("give both --tls-cert and --tls-key")
    try:
        check_bind(host, tls=bool(tls_cert), insecure=insecure)
    except ShareError as exc:
        raise WaterlineError(exc.message) from None
    loaded = _specs(specs)
    if not any(spec.audiences for spec in loaded):
        raise WaterlineError("no spec has `audiences:`; nothing would be shared")
    server = SharingServer(loaded, _store(loaded, store_path), url_ttl_seconds=url_ttl)
    scheme = "https" if tls_cert else "http"
    click.echo(f"serving {', '.join(s.feed for s in loaded)} on {scheme}://{host}:{port}", err=True)
    run(server, host=host, port=port, tls_cert=tls_cert, tls_key=tls_key)


@share_group.group("token")
def token_group() -> None:
    """Recipients' bearer tokens (only their hashes are stored)."""


_OLD_SPEC = click.option("--spec", "old_specs", multiple=True, hidden=True,
                         help="Deprecated: give SPEC... as the first arguments.")


def _specs_and_recipient(verb: str, args: tuple[str, ...], old_specs: tuple[str, ...], *,
                         recipient_required: bool = True) -> tuple[tuple[str, ...], str | None]:
    """SPEC... then RECIPIENT from the positional ``args`` or, in the deprecated form, the specs
    from ``--spec`` and RECIPIENT the only positional argument."""
    if old_specs:
        new_form = f"`waterline share token {verb} SPEC... {'RECIPIENT' if recipient_required else '[--recipient R]'}`"
        deprecated("--spec", new_form)
        if len(args) > 1 or (recipient_required and not args):
            raise click.UsageError(f"with --spec, give RECIPIENT only (or drop --spec: {new_form})")
        return old_specs, (args[0] if args else None)
    if not recipient_required:
        return args, None
    if len(args) < 2:
        raise click.UsageError(f"give SPEC... RECIPIENT (e.g. waterline share token {verb} feeds/ticks.yaml acme)")
    return args[:-1], args[-1]


def _recipient_known(specs, recipient: str) -> None:
    known = sorted({r for spec in specs for r in spec.audiences})
    if recipient not in known:
        raise WaterlineError(f"recipient {recipient!r} is in no spec's audiences "
                             f"(audiences: {', '.join(known) or 'none'})")


@token_group.command("create")
@click.argument("args", nargs=-1, metavar="SPEC... RECIPIENT")
@_OLD_SPEC
@click.option("--expires", default="30d", show_default=True, help="Lifetime, e.g. 12h, 30d, 90 days; 'never'.")
@click.option("--endpoint", default="http://127.0.0.1:8080", show_default=True,
              help="The server's URL as subscribers reach it (goes into the profile file).")
@_STORE
def token_create(args, old_specs, expires, endpoint, store_path) -> None:
    """Create a token for RECIPIENT (named in an audience of SPEC...) and print its profile
    file (JSON) on stdout."""
    spec_paths, recipient = _specs_and_recipient("create", args, old_specs)
    specs = _specs(spec_paths)
    _recipient_known(specs, recipient)
    now = int(time.time() * 1000)
    expires_ms = None
    if expires != "never":
        try:
            lifetime = duration_us(parse_duration(_expand(expires))) // 1000
        except (ValueError, WaterlineError) as exc:
            raise WaterlineError(f"--expires: {exc}") from None
        if lifetime <= 0:
            raise WaterlineError("--expires: must be longer than 0 seconds")
        expires_ms = now + lifetime
    store = _store(specs, store_path)
    store.trail.audiences({spec.feed: spec.audiences for spec in specs}, at_ms=now)
    token, record = store.create(recipient, now_ms=now, expires_ms=expires_ms)
    click.echo(json.dumps(profile(endpoint, token, expires_ms), indent=2))
    click.echo(f"token {record.id} for {recipient} created; the profile above is shown once", err=True)


@token_group.command("list")
@click.argument("args", nargs=-1, metavar="SPEC...")
@click.option("--recipient", "only", help="Only this recipient's tokens.")
@_OLD_SPEC
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@_STORE
def token_list(args, only, old_specs, as_json, store_path) -> None:
    """List the tokens of SPEC...'s store (id, recipient, created, expires, revoked), never the
    tokens themselves."""
    spec_paths, recipient = _specs_and_recipient("list", args, old_specs, recipient_required=False)
    if not spec_paths:
        raise click.UsageError("give SPEC... (e.g. waterline share token list feeds/ticks.yaml)")
    if recipient is not None and only is not None and recipient != only:
        raise click.UsageError("give the recipient once (--recipient)")
    recipient = recipient or only
    now = int(time.time() * 1000)
    rows = []
    for r in _store(_specs(spec_paths), store_path).records():
        if recipient in (None, r.recipient):
            state = "revoked" if r.revoked_ms else ("active" if r.active(now) else "expired")
            rows.append((r, state))
    if as_json:
        click.echo(json.dumps([{"id": r.id, "recipient": r.recipient, "state": state, "created_ms": r.created_ms,
                                "expires_ms": r.expires_ms, "revoked_ms": r.revoked_ms} for r, state in rows],
                              indent=2))
        return
    for r, state in rows:
        click.echo(f"{r.id}  {r.recipient}  {state}  created={_iso(r.created_ms)}  "
                   f"expires={_iso(r.expires_ms) if r.expires_ms else 'never'}")


@token_group.command("revoke")
@click.argument("args", nargs=-1, metavar="SPEC... RECIPIENT")
@_OLD_SPEC
@click.option("--id", "token_id", help="Only this token (default: all of the recipient's live tokens).")
@_STORE
def token_revoke(args, old_specs, token_id, store_path) -> None:
    """Revoke RECIPIENT's tokens; a running server refuses them from its next request."""
    spec_paths, recipient = _specs_and_recipient("revoke", args, old_specs)
    revoked = _store(_specs(spec_paths), store_path).revoke(recipient, now_ms=int(time.time() * 1000),
                                                            token_id=token_id)
    if not revoked:
        raise WaterlineError(f"no live token of {recipient!r}" + (f" with id {token_id}" if token_id else ""))
    click.echo(f"revoked {len(revoked)} token(s) of {recipient}: {', '.join(r.id for r in revoked)}")


@share_group.command("entitlements")
@click.argument("specs", nargs=-1, required=True)
@click.option("--at", "at", required=True, help="The instant (ISO 8601, UTC unless it says otherwise; or 'now').")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@_STORE
def entitlements(specs, at, as_json, store_path) -> None:
    """Who could read which tier of SPEC...'s feeds at an instant, from the entitlement trail
    (tokens created, revoked, expired; audiences as each server start and token creation saw them)."""
    loaded = _specs(specs)
    try:
        at_us = parse_instant(at)
    except (ValueError, WaterlineError) as exc:
        raise WaterlineError(f"--at: {exc}") from None
    feeds = {spec.feed for spec in loaded}
    store = _store(loaded, store_path)
    found = [e for e in entitled_at(store.trail.events(), at_us) if e.feed in feeds]
    if as_json:
        click.echo(json.dumps({"at_us": at_us, "entitlements": [asdict(e) for e in found]}, indent=2))
        return
    click.echo(f"entitled at {format_instant(at_us)} (trail {store.trail.path}):")
    if not found:
        click.echo("  nobody")
    for e in found:
        click.echo(f"  {e.feed}  {e.recipient}  tiers {', '.join(e.tiers)}  tokens {', '.join(e.tokens)}")


def _expand(text: str) -> str:
    """`30d`, `12h`, `15m`, `90s` as the duration words `parse_duration` reads."""
    match = re.fullmatch(r"\s*(\d+)\s*([dhms])\s*", text)
    if not match:
        return text
    unit = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}[match.group(2)]
    return f"{match.group(1)} {unit}"


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))
