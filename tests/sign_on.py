"""The campus sign-on services the tests and `bench/sso.py` start on 127.0.0.1: Debian's slapd and oidc-provider.

`scripts/sign_on.sh install` (run by `make test`) installs them; these classes start one of each in a temporary
directory, with a generated configuration, and stop them again. slapd never runs as root: started by root it
drops to Debian's `openldap` user. Both listen on a free high port of 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE_DN = "dc=lab,dc=example"
SERVICE_DN = f"cn=portal,ou=services,{BASE_DN}"
SERVICE_PASSWORD = "portal-service-password"
PEOPLE_PASSWORD = "campus-password-1"
OIDC_CLIENT_ID = "gpulab-portal"
OIDC_CLIENT_SECRET = "test-client-secret"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not start within {timeout:.0f} s")


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


# (uid, given name, family name, mail, groups). `sam` administers the portal; the others are students.
PEOPLE = [
    ("lena", "Lena", "Lindqvist", "lena@campus.example", ["hpc-students"]),
    ("omar", "Omar", "Okafor", "omar@campus.example", ["hpc-students"]),
    ("tara", "Tara", "Teller", "tara@campus.example", ["hpc-tas"]),
    ("sam", "Sam", "Sysadmin", "sam@campus.example", ["portal-admins"]),
]
GROUPS = ["hpc-students", "hpc-tas", "portal-admins"]


def directory_ldif(extra_people: int = 0) -> str:
    """The test directory: ou=people (inetOrgPerson + posixAccount), ou=groups (groupOfNames), one service DN."""
    people = list(PEOPLE) + [
        (f"bench{i:03d}", "Bench", f"User {i}", f"bench{i:03d}@campus.example", ["hpc-students"])
        for i in range(extra_people)
    ]
    entries = [
        f"dn: {BASE_DN}\nobjectClass: dcObject\nobjectClass: organization\no: Lab\ndc: lab",
        f"dn: ou=people,{BASE_DN}\nobjectClass: organizationalUnit\nou: people",
        f"dn: ou=groups,{BASE_DN}\nobjectClass: organizationalUnit\nou: groups",
        f"dn: ou=services,{BASE_DN}\nobjectClass: organizationalUnit\nou: services",
        f"dn: {SERVICE_DN}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: portal\n"
        f"userPassword: {SERVICE_PASSWORD}",
    ]
    for number, (uid, given, family, mail, _groups) in enumerate(people):
        entries.append(
            f"dn: uid={uid},ou=people,{BASE_DN}\nobjectClass: inetOrgPerson\nobjectClass: posixAccount\n"
            f"uid: {uid}\ncn: {given} {family}\ngivenName: {given}\nsn: {family}\nmail: {mail}\n"
            f"uidNumber: {20000 + number}\ngidNumber: 20000\nhomeDirectory: /home/{uid}\n"
            f"userPassword: {PEOPLE_PASSWORD}"
        )
    for group in GROUPS:
        members = [f"member: uid={p[0]},ou=people,{BASE_DN}" for p in people if group in p[4]]
        entries.append(
            f"dn: cn={group},ou=groups,{BASE_DN}\nobjectClass: groupOfNames\ncn: {group}\n" + "\n".join(members)
        )
    return "\n\n".join(entries) + "\n"


# `allow bind_anon_dn`: like many campus directories (Active Directory among them), this one answers a DN with an
# empty password as a successful anonymous bind, so the portal's own refusal of empty passwords is what is tested.
SLAPD_CONF = """\
allow bind_anon_dn
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {dir}/slapd.pid
argsfile {dir}/slapd.args
sizelimit unlimited
database mdb
maxsize 104857600
suffix "{base}"
rootdn "cn=admin,{base}"
rootpw {root_password}
directory {dir}/data
access to attrs=userPassword by anonymous auth by * none
access to * by dn.exact="{service}" read by self read by * none
"""


class Slapd:
    """Debian's slapd serving the test directory on ldap://127.0.0.1:<port>/."""

    def __init__(self, extra_people: int = 0):
        self.dir = Path(tempfile.mkdtemp(prefix="gpulab-slapd-"))
        self.port = free_port()
        self.url = f"ldap://127.0.0.1:{self.port}"
        self.root_password = "directory-root-password"
        (self.dir / "data").mkdir()
        conf = SLAPD_CONF.format(dir=self.dir, base=BASE_DN, root_password=self.root_password, service=SERVICE_DN)
        (self.dir / "slapd.conf").write_text(conf)
        (self.dir / "directory.ldif").write_text(directory_ldif(extra_people))
        self.proc: subprocess.Popen | None = None
        self.extra_people = extra_people

    def start(self) -> Slapd:
        slapd = shutil.which("slapd") or "/usr/sbin/slapd"
        if not os.path.exists(slapd):
            raise RuntimeError("slapd is not installed; `scripts/sign_on.sh install` (run by `make test`) installs it.")
        conf = str(self.dir / "slapd.conf")
        # The directory is loaded offline (slapadd), then served; root hands the files to openldap, slapd drops to it.
        subprocess.run(
            [shutil.which("slapadd") or "/usr/sbin/slapadd", "-f", conf, "-l", str(self.dir / "directory.ldif")],
            check=True,
            capture_output=True,
        )
        drop = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "openldap", "openldap")
            for path in self.dir.rglob("*"):
                shutil.chown(path, "openldap", "openldap")
            drop = ["-u", "openldap", "-g", "openldap"]
        argv = [slapd, "-d", "0", "-f", conf, "-h", f"{self.url}/", *drop]
        self.log = (self.dir / "slapd.log").open("w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        _wait(lambda: _listening(self.port) or self.proc.poll() is not None, 30, "slapd")
        if self.proc.poll() is not None:
            raise RuntimeError(f"slapd exited: {(self.dir / 'slapd.log').read_text()[-2000:]}")
        return self

    def settings_env(self) -> dict[str, str]:
        """The portal's LDAP variables for this directory (see docs/operations.md, "Single sign-on")."""
        return {
            "LDAP_SERVER_URI": self.url,
            "LDAP_BIND_DN": SERVICE_DN,
            "LDAP_BIND_PASSWORD": SERVICE_PASSWORD,
            "LDAP_USER_SEARCH_BASE": f"ou=people,{BASE_DN}",
            "LDAP_USER_FILTER": "(uid=%(user)s)",
            "LDAP_GROUP_SEARCH_BASE": f"ou=groups,{BASE_DN}",
            "LDAP_STAFF_GROUP": f"cn=portal-admins,ou=groups,{BASE_DN}",
        }

    def reset(self) -> None:
        """Put the directory back as it started (people, groups, services), for the next test: a test changes entries
        through `modify` or the portal, never the base entry, so the three subtrees are deleted and added again."""
        admin = ["-x", "-H", self.url, "-D", f"cn=admin,{BASE_DN}", "-w", self.root_password]
        subtrees = [f"ou={name},{BASE_DN}" for name in ("people", "groups", "services")]
        subprocess.run(["ldapdelete", *admin, "-r", *subtrees], check=True, capture_output=True)
        entries = directory_ldif(self.extra_people).split("\n\n")[1:]  # all but the base entry
        subprocess.run(["ldapadd", *admin], input="\n\n".join(entries), text=True, check=True, capture_output=True)

    def modify(self, ldif: str) -> None:
        """Change the directory as its administrator would (ldapmodify as the root DN)."""
        argv = ["ldapmodify", "-x", "-H", self.url, "-D", f"cn=admin,{BASE_DN}", "-w", self.root_password]
        subprocess.run(argv, input=ldif, text=True, check=True, capture_output=True)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=15)
        shutil.rmtree(self.dir, ignore_errors=True)


class OidcProvider:
    """tests/oidc/provider.mjs (npm oidc-provider under Node.js) on http://127.0.0.1:<port>."""

    def __init__(self, accounts: dict | None = None):
        self.dir = Path(tempfile.mkdtemp(prefix="gpulab-oidc-"))
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.accounts_file = self.dir / "accounts.json"
        self.set_accounts(accounts or {})
        self.proc: subprocess.Popen | None = None

    def set_accounts(self, accounts: dict) -> None:
        """{"<login>": {"password": …, "claims": {…}}}; the provider reads the file at every sign-in."""
        self.accounts_file.write_text(json.dumps(accounts))

    def start(self) -> OidcProvider:
        node, script = shutil.which("node"), ROOT / "tests/oidc/provider.mjs"
        if not node or not (ROOT / "tests/oidc/node_modules/oidc-provider").is_dir():
            raise RuntimeError("Node.js or oidc-provider is missing; `scripts/sign_on.sh install` installs them.")
        env = {
            "PATH": os.environ.get("PATH", ""),
            "OIDC_TEST_PORT": str(self.port),
            "OIDC_TEST_ACCOUNTS": str(self.accounts_file),
            "OIDC_TEST_CLIENT_ID": OIDC_CLIENT_ID,
            "OIDC_TEST_CLIENT_SECRET": OIDC_CLIENT_SECRET,
            "OIDC_TEST_REDIRECT_URI": "http://127.0.0.1/oidc/callback/",
            "OIDC_TEST_POST_LOGOUT_URI": "http://127.0.0.1/login/",
        }
        self.log = (self.dir / "provider.log").open("w")
        self.proc = subprocess.Popen(
            [node, str(script)], env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        _wait(lambda: _listening(self.port) or self.proc.poll() is not None, 30, "oidc-provider")
        if self.proc.poll() is not None:
            raise RuntimeError(f"oidc-provider exited: {(self.dir / 'provider.log').read_text()[-2000:]}")
        return self

    def settings_env(self) -> dict[str, str]:
        """The portal's OIDC variables for this provider (see docs/operations.md, "Single sign-on")."""
        return {
            "OIDC_ISSUER": self.issuer,
            "OIDC_AUTHORIZATION_ENDPOINT": f"{self.issuer}/auth",
            "OIDC_TOKEN_ENDPOINT": f"{self.issuer}/token",
            "OIDC_USERINFO_ENDPOINT": f"{self.issuer}/me",
            "OIDC_JWKS_ENDPOINT": f"{self.issuer}/jwks",
            "OIDC_END_SESSION_ENDPOINT": f"{self.issuer}/session/end",
            "OIDC_CLIENT_ID": OIDC_CLIENT_ID,
            "OIDC_CLIENT_SECRET": OIDC_CLIENT_SECRET,
            "OIDC_SCOPES": "openid email profile groups",
            "OIDC_GROUPS_CLAIM": "groups",
            "OIDC_STAFF_GROUPS": "portal-admins",
        }

    def tamper_next_id_token(self, **claims) -> None:
        """Have the provider re-sign its next ID token with these claims replaced (a valid signature, wrong claims)."""
        url = f"{self.issuer}/_test/tamper"
        request = urllib.request.Request(url, data=json.dumps(claims).encode(), method="POST")  # noqa: S310
        urllib.request.urlopen(request, timeout=5).read()  # noqa: S310 (loopback)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=15)
        shutil.rmtree(self.dir, ignore_errors=True)


def account(username: str, email: str, *, verified: bool = True, groups: list[str] | None = None, **claims) -> dict:
    """One provider account whose password is PEOPLE_PASSWORD."""
    return {
        "password": PEOPLE_PASSWORD,
        "claims": {
            "preferred_username": username,
            "email": email,
            "email_verified": verified,
            "groups": groups or [],
            "given_name": claims.get("given_name", username.title()),
            "family_name": claims.get("family_name", "Campus"),
            **{k: v for k, v in claims.items() if k not in {"given_name", "family_name"}},
        },
    }
