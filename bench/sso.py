"""Campus sign-in, timed end to end: OIDC logins in Chromium and concurrent API tokens through LDAP.

Starts its own slapd (the test directory plus `--people` generated accounts), the test OpenID provider
(oidc-provider under Node.js) and one uvicorn serving the portal against a throw-away database, all on 127.0.0.1.

  1. `--logins` (50) OIDC logins, each in a fresh Chromium context: the login page, the campus button, the provider's
     sign-in and consent pages, back on the portal signed in. Prints median and p95.
  2. `--tokens` (200) `POST /api/v1/token/` at once, each a different directory user, so each one is a bind to
     slapd: a first round that also makes the accounts, then a second. Prints errors (must be 0), latency, rate.

Run after `make test` or `make demo` started PostgreSQL and Redis:  .venv/bin/python bench/sso.py
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common


def oidc_logins(base: str, count: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    from tests.sign_on import PEOPLE_PASSWORD

    times = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
        )
        for i in range(count):
            context = browser.new_context()
            page = context.new_page()
            started = time.perf_counter()
            page.goto(f"{base}/login/")
            page.click("#campus-sign-in")
            page.fill("#login", f"oidc{i:03d}")
            page.fill("#password", PEOPLE_PASSWORD)
            page.click("#sign-in")
            page.click("#allow")
            page.wait_for_url(f"{base}/", timeout=30_000)
            page.locator(".who").wait_for()
            times.append(time.perf_counter() - started)
            context.close()
        browser.close()
    return times


def token_round(base: str, count: int) -> tuple[list[float], list[str], float]:
    import requests

    from tests.sign_on import PEOPLE_PASSWORD

    gate = threading.Barrier(count)
    latencies: list[float] = []
    errors: list[str] = []

    def one(i: int) -> None:
        gate.wait()
        started = time.perf_counter()
        try:
            answer = requests.post(
                f"{base}/api/v1/token/", data={"username": f"bench{i:03d}", "password": PEOPLE_PASSWORD}, timeout=120
            )
            if answer.status_code != 200 or "token" not in answer.json():
                errors.append(f"bench{i:03d}: HTTP {answer.status_code} {answer.text[:120]}")
        except requests.RequestException as exc:
            errors.append(f"bench{i:03d}: {exc}")
        latencies.append(time.perf_counter() - started)

    wall = time.perf_counter()
    with ThreadPoolExecutor(max_workers=count) as pool:
        list(pool.map(one, range(count)))
    return latencies, errors, time.perf_counter() - wall


RESULTS = common.ROOT / "bench/results/sso.txt"


def report(line: str) -> None:
    """Printed, and kept in bench/results/sso.txt."""
    print(line, flush=True)
    with RESULTS.open("a") as out:
        out.write(line + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logins", type=int, default=50)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--web-workers", type=int, default=1, help="uvicorn worker processes")
    args = parser.parse_args()

    common.load_env()
    # A database and Redis database of its own: other test runs and benchmarks on this machine are left alone.
    os.environ["DATABASE_URL"] = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/gpulab_ssobench"
    teardown = common.setup_database()
    from tests.sign_on import OidcProvider, Slapd, account, free_port

    slapd = Slapd(extra_people=args.tokens).start()
    provider = OidcProvider(
        {f"oidc{i:03d}": account(f"oidc{i:03d}", f"oidc{i:03d}@campus.example") for i in range(args.logins)}
    ).start()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = Path(tempfile.mkdtemp(prefix="gpulab-bench-sso-")) / "web.log"
    argv = [str(common.ROOT / ".venv/bin/uvicorn"), "portal.asgi:application", "--host", "127.0.0.1"]
    argv += ["--port", str(port), "--workers", str(args.web_workers), "--log-level", "warning"]
    env = {**slapd.settings_env(), **provider.settings_env(), "LOG_LEVEL": "WARNING"}
    web = common.start(argv, log, **env)
    try:
        import urllib.request

        def up() -> bool:
            try:
                return urllib.request.urlopen(f"{base}/healthz", timeout=2).status == 200
            except OSError:
                return False

        common.wait_for(up, 60, "the portal")
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(f"# bench/sso.py, {time.strftime('%Y-%m-%d %H:%M')} UTC\n")
        print(f"portal {base} ({args.web_workers} uvicorn worker(s)), slapd {slapd.url}, provider {provider.issuer}")

        times = oidc_logins(base, args.logins)
        report(
            f"OIDC login in Chromium, end to end ({len(times)} logins, each a new browser context with sign-in and "
            f"consent): median {common.percentile(times, 50):.3f} s, p95 {common.percentile(times, 95):.3f} s, "
            f"max {max(times):.3f} s"
        )
        for label in ("first (accounts made from the directory)", "second"):
            latencies, errors, wall = token_round(base, args.tokens)
            report(
                f"POST /api/v1/token/ through LDAP, {args.tokens} at once, {label}: {len(errors)} errors, "
                f"{common.summary(latencies)}, all done in {wall:.2f} s ({args.tokens / wall:.0f}/s)"
            )
            for error in errors[:5]:
                report(f"   {error}")
    finally:
        common.stop(web)
        provider.stop()
        slapd.stop()
        teardown()


if __name__ == "__main__":
    main()
