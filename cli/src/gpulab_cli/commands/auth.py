"""login, logout and profiles: which portals this user is signed in to, as whom."""

from __future__ import annotations

import ipaddress
import socket
import sys
import time
from urllib.parse import urlsplit

import click

from .. import client, context, exits, profiles
from ..output import emit_json, note, output_option, table

LOOPBACK_NAMES = {"localhost"}


@click.command(
    epilog="""\b
Examples:
  gpulab login https://gpulab.example.edu
  gpulab --profile lab2 login https://lab2.example.edu -u alice
  printf '%s\\n' "$PASSWORD" | gpulab login https://gpulab.example.edu -u alice --password-stdin
  gpulab login https://gpulab.example.edu --browser   (campus single sign-on: confirm a code in your browser)
  gpulab login https://gpulab.example.edu --browser -u alice   (keep it only if alice confirmed it)"""
)
@click.argument("url")
@click.option("-u", "--username", help="Your portal username (asked for when left out).")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin (for scripts).")
@click.option(
    "--browser",
    is_flag=True,
    help="Sign in through your browser, where you are signed in (campus single sign-on: no password here).",
)
def login(url: str, username: str | None, password_stdin: bool, browser: bool) -> None:
    """Sign in to the portal at URL with your username and password, or with --browser by confirming a code on
    the portal's page in your browser.

    The API token the portal gives is kept in your config directory (readable by you only) under the profile named
    by --profile, or as the default profile."""
    url = portal_url(url)
    if browser:
        if password_stdin:
            raise click.UsageError("--browser takes no password: you confirm in your browser.")
        token, confirmed_by = browser_login(url)
        if username is not None and confirmed_by != username:
            # Someone else typed the code first (read off this screen): their token is not kept here.
            raise exits.Refused(
                f"The code was confirmed by {confirmed_by}, not {username}: nothing was kept. Run the login again "
                "and confirm it yourself."
            )
        keep(url, confirmed_by, token)
        return
    if username is None:
        username = click.prompt("Username", err=True)
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, err=True)
    token = client.Portal(url).obtain_token(username, password)
    keep(url, username, token)


def keep(url: str, username: str, token: str) -> None:
    chosen = context.profile_name()
    profile = profiles.Profile(name=chosen or profiles.DEFAULT_NAME, url=url, username=username, token=token)
    profiles.save(profile, make_default=chosen is None)
    note(f"Signed in to {url} as {username} (profile {profile.name}).")


def browser_login(url: str) -> tuple[str, str]:
    """The portal shows a page where the signed-in user types the code printed here; this polls until they have."""
    portal = client.Portal(url)
    started = portal.start_code_login(f"gpulab on {socket.gethostname()}"[:100])
    note(f"Open {started['verification_url']} in the browser where you are signed in to the portal,")
    note(f"and type this code: {started['user_code']}")
    note(f"(it lasts {int(started['expires_in']) // 60} minutes; Ctrl-C gives up)")
    deadline = time.monotonic() + int(started["expires_in"]) + 5
    while time.monotonic() < deadline:
        time.sleep(max(1, int(started.get("interval", 2))))
        # Refused (410) when it was refused in the browser, expired or used: the portal's words say which.
        try:
            answer = portal.poll_code_login(str(started["device_code"]))
        except client.Refused as exc:
            if exc.status != 429:
                raise
            time.sleep(int(started.get("interval", 2)))  # asked too soon: the portal says slow down
            continue
        if answer is not None:
            return str(answer["token"]), str(answer["username"])
    raise exits.Refused("The code expired before it was confirmed: run `gpulab login --browser` again.")


@click.command(
    epilog="""\b
Examples:
  gpulab logout
  gpulab --profile lab2 logout --local"""
)
@click.option("--local", is_flag=True, help="Only forget the token here, without asking the portal to revoke it.")
def logout(local: bool) -> None:
    """Revoke the profile's API token on the portal and forget it here.

    The portal keeps one token per user: scripts and other profiles that use the same token stop working too."""
    profile = context.signed_in()
    if not local:
        revoke(profile)
    profiles.forget(profile.name)
    note(f"Signed out of {profile.url} (profile {profile.name}).")


def revoke(profile: profiles.Profile) -> None:
    try:
        client.Portal(profile.url, profile.token).revoke_token()
    except client.Refused as exc:
        if exc.status == 401:
            return  # the token no longer works: nothing left to revoke
        if exc.status in (404, 405):
            note("This portal cannot revoke tokens from here: make a new one on your profile page to end this one.")
            return
        raise
    except client.Unavailable as exc:
        kept = "Nothing was forgotten; `gpulab logout --local` forgets the token here only."
        raise exits.Failure(f"{exc}\n{kept}") from None


@click.command(name="profiles", epilog="\b\nExample:\n  gpulab profiles -o json")
@output_option
def list_profiles(output: str) -> None:
    """The portals you are signed in to (never their tokens)."""
    default, known = profiles.listing()
    rows = [{"name": p.name, "url": p.url, "username": p.username, "default": p.name == default} for p in known]
    if output == "json":
        emit_json(rows)
        return
    if not rows:
        note("Not signed in anywhere: run `gpulab login URL`.")
        return
    table(["PROFILE", "URL", "USER", "DEFAULT"], ([r["name"], r["url"], r["username"], r["default"]] for r in rows))


def portal_url(text: str) -> str:
    """The portal's address as given, without a trailing slash; plain HTTP to another machine is warned about."""
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise click.BadParameter(
            "give the portal's address with its scheme, e.g. https://gpulab.example.edu", param_hint="URL"
        )
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        note(f"Warning: {parts.hostname} is reached over plain HTTP: your password and token travel unencrypted.")
    return text.strip().rstrip("/")


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
