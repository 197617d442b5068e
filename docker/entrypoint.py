"""Container entrypoint of the game server (runs under tini as PID 1).

1. Builds the effective properties file: the official-style Docker secret
   /run/secrets/gameserver_properties if present, else $PIRANHAS_PROPERTIES, else the image's
   /etc/piranhas/server.properties; plus the admin password, if one is given, from
   $PIRANHAS_PASSWORD_FILE, the secret /run/secrets/piranhas_password or $PIRANHAS_PASSWORD.
   The password goes into a private file, never onto the command line, where every user of the
   Docker host could read it with `ps`.
2. Started as root (the default): makes /data writable for the user piranhas (a host directory
   bind-mounted there is usually owned by root), then drops to that user for good.
3. Execs `piranhas-server --host 0.0.0.0 --properties FILE ARGS…` in /data, so replays go to
   /data/replays. ARGS are the container's command; flags there win over the file. A command
   that does not start with "-" (e.g. `sh`) is executed instead of the server.
"""

from __future__ import annotations

import os
import pwd
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

USER = "piranhas"
DATA = Path("/data")
IMAGE_PROPERTIES = Path("/etc/piranhas/server.properties")
PROPERTIES_SECRET = Path("/run/secrets/gameserver_properties")
PASSWORD_SECRET = Path("/run/secrets/piranhas_password")


def fail(message: str) -> NoReturn:
    print(f"piranhas-entrypoint: {message}", file=sys.stderr)
    sys.exit(2)


def escape_property_value(value: str) -> str:
    """Java properties escaping for a value (what server.config's parser undoes)."""
    out = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    out = out.replace("\t", "\\t").replace("\f", "\\f")
    # Leading blanks of a value are separators in the properties format.
    stripped = out.lstrip(" ")
    return "\\ " * (len(out) - len(stripped)) + stripped


def read_password() -> str | None:
    path_text = os.environ.pop("PIRANHAS_PASSWORD_FILE", "")
    env_password = os.environ.pop("PIRANHAS_PASSWORD", None)
    path = Path(path_text) if path_text else PASSWORD_SECRET
    if path_text or path.exists():
        try:
            # A secret file usually ends with a newline that is not part of the password.
            return path.read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as error:
            fail(f"cannot read the password file {path}: {error.strerror}")
    return env_password


def base_properties() -> Path:
    if PROPERTIES_SECRET.exists():
        return PROPERTIES_SECRET
    return Path(os.environ.get("PIRANHAS_PROPERTIES", str(IMAGE_PROPERTIES)))


def write_effective_properties(uid: int, gid: int) -> Path:
    base = base_properties()
    try:
        text = base.read_text(encoding="utf-8")
    except OSError as error:
        fail(f"cannot read the properties file {base}: {error.strerror}")
    password = read_password()
    if password is not None:
        if not password:
            fail("the admin password is empty")
        # The last occurrence of a key wins, as in java.util.Properties.
        text = f"{text.rstrip()}\npassword = {escape_property_value(password)}\n"
    directory = Path(tempfile.mkdtemp(prefix="piranhas-"))
    target = directory / "server.properties"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
    if os.getuid() == 0:
        os.chown(directory, uid, gid)
        os.chown(target, uid, gid)
    return target


def prepare_data_dir(uid: int, gid: int) -> None:
    """Hand /data and what lies directly in it to the server's user (root only).

    One level deep: the server creates everything below replays/ itself, and a recursive
    chown of a large replay archive would delay every start.
    """
    DATA.mkdir(exist_ok=True)
    for path in (DATA, *DATA.iterdir()):
        status = path.lstat()
        if status.st_uid != uid and not path.is_symlink():
            os.chown(path, uid, gid)


def main(argv: list[str]) -> None:
    if argv and not argv[0].startswith("-"):
        os.execvp(argv[0], argv)
    account = pwd.getpwnam(USER)
    properties = write_effective_properties(account.pw_uid, account.pw_gid)
    if os.getuid() == 0:
        prepare_data_dir(account.pw_uid, account.pw_gid)
        os.setgroups([])
        os.setgid(account.pw_gid)
        os.setuid(account.pw_uid)
        os.environ["HOME"] = str(DATA)
    if not os.access(DATA, os.W_OK):
        fail(f"{DATA} is not writable by uid {os.getuid()}: replays and results go there")
    os.chdir(DATA)
    command = ["piranhas-server", "--host", "0.0.0.0", "--properties", str(properties), *argv]
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
